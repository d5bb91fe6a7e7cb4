-- Driven by tests/test_nvim_plugin.py: nvim --headless -u NONE --cmd 'set rtp^=editors/nvim' -S drive.lua
-- Runs the plugin's commands against the real daemon and writes what the user would see as JSON to $KB_TEST_OUT.
local env = vim.env
local harness = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":h") .. "/harness.lua")
local report, finish = harness.report, harness.finish

report.echoes = {}
local echo = vim.api.nvim_echo
vim.api.nvim_echo = function(chunks, history, opts) -- what the message area shows (progress is not kept in :messages)
  table.insert(report.echoes, chunks[1][1])
  return echo(chunks, history, opts)
end

local function wait(what, cond)
  if not vim.wait(90000, cond, 20) then
    report.timeout = what
    finish()
  end
end

local function noted(pattern)
  return function()
    for _, n in ipairs(report.notes) do
      if n.msg:find(pattern, 1, true) then
        return true
      end
    end
    return false
  end
end

vim.o.columns, vim.o.lines = 120, 40
local kb = require("jsonl_engine")
kb.setup({ cmd = { env.KB_TEST_PYTHON, "-m", "jsonl_engine" }, kb = env.KB_TEST_KB, llm = false })
local ok, err = pcall(function()
  vim.cmd("KbIngest " .. env.KB_TEST_DOCS)
  wait("ingest", noted("ingested "))

  vim.cmd("KbAsk " .. env.KB_TEST_QUESTION)
  wait("ask", function()
    return kb.last ~= nil
  end)
  report.float = {
    lines = vim.api.nvim_buf_get_lines(kb.last.buf, 0, -1, false),
    relative = vim.api.nvim_win_get_config(kb.last.win).relative,
    current = vim.api.nvim_get_current_win() == kb.last.win,
  }
  report.qf = {}
  for _, item in ipairs(vim.fn.getqflist()) do
    table.insert(report.qf, { text = item.text, lnum = item.lnum, col = item.col,
      bufname = vim.api.nvim_buf_get_name(item.bufnr) })
  end
  report.qf_title = vim.fn.getqflist({ title = 1 }).title
  vim.cmd("close")
  report.opened = {}
  for i = 1, #report.qf do
    vim.cmd("cc " .. i)
    local ns = vim.api.nvim_create_namespace("jsonl_engine")
    local marks = {}
    for _, m in ipairs(vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, { details = true })) do
      table.insert(marks, { m[2], m[3], m[4].end_row, m[4].end_col, m[4].hl_group })
    end
    table.insert(report.opened, {
      name = vim.api.nvim_buf_get_name(0),
      cursor = vim.api.nvim_win_get_cursor(0),
      lines = vim.api.nvim_buf_get_lines(0, 0, -1, false),
      buftype = vim.bo.buftype,
      marks = marks,
    })
    kb.pdf()
    kb.last_render = nil
    vim.cmd("KbRender") -- the cited section in the current buffer
    wait("render " .. i, function()
      return kb.last_render ~= nil or noted("no picture for [" .. i .. "]")()
    end)
    report.opened[#report.opened].render = kb.last_render and kb.last_render.paths or vim.NIL
  end

  vim.cmd("KbContext how long is the pier")
  wait("context", function()
    return kb.last_context ~= nil
  end)
  report.context = kb.last_context.lines
  vim.cmd("close")

  kb.config.llm = true -- no LLM configured: the daemon's error, as a notification
  vim.cmd("KbAsk what were the fuel costs?")
  wait("llm error", noted("llm_unavailable"))
end)
report.lua_error = not ok and tostring(err) or vim.NIL
finish()
