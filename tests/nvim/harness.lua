-- Shared by the drive scripts: a report of what the user would see (notifications are kept, not shown), and
-- finish(), which writes it as JSON to $KB_TEST_OUT and quits.
local report = { notes = {} }
vim.notify = function(msg, level)
  table.insert(report.notes, { msg = msg, level = level })
end

local function finish()
  local f = assert(io.open(vim.env.KB_TEST_OUT, "w"))
  f:write(vim.json.encode(report))
  f:close()
  vim.cmd("qa!")
end

return { report = report, finish = finish }
