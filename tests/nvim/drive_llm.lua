-- Driven by tests/test_nvim_plugin.py: :KbAsk with llm = true (kb.answer, stream = false) on a daemon whose LLM is
-- the loopback scripted server; writes the float's lines and the quickfix entries as JSON to $KB_TEST_OUT.
local env = vim.env
local harness = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":h") .. "/harness.lua")
local report, finish = harness.report, harness.finish

vim.o.columns, vim.o.lines = 120, 40
local kb = require("jsonl_engine")
kb.setup({ cmd = { env.KB_TEST_PYTHON, "-m", "jsonl_engine" }, kb = env.KB_TEST_KB, llm = true })
local ok, err = pcall(function()
  vim.cmd("KbAsk " .. env.KB_TEST_QUESTION)
  if not vim.wait(90000, function()
    return kb.last ~= nil or #report.notes > 0
  end, 20) then
    report.timeout = "ask"
  end
  if kb.last then
    report.method = kb.last.method
    report.float = vim.api.nvim_buf_get_lines(kb.last.buf, 0, -1, false)
    report.qf = {}
    for _, item in ipairs(vim.fn.getqflist()) do
      table.insert(report.qf, { text = item.text, lnum = item.lnum, col = item.col,
        bufname = vim.api.nvim_buf_get_name(item.bufnr) })
    end
  end
end)
report.lua_error = not ok and tostring(err) or vim.NIL
finish()
