-- :KbAsk {question}, :KbIngest {path}, :KbContext {query}, :KbPdf, :KbRender [n]; the daemon starts on first use.
if vim.g.loaded_jsonl_engine then
  return
end
vim.g.loaded_jsonl_engine = true
vim.cmd("highlight default link KbQuote IncSearch")

local function kb()
  return require("jsonl_engine")
end

vim.api.nvim_create_user_command("KbAsk", function(opts)
  kb().ask(opts.args)
end, { nargs = "+", desc = "jsonl-engine: answer with numbered citations (float + quickfix)" })
vim.api.nvim_create_user_command("KbIngest", function(opts)
  kb().ingest(opts.args)
end, { nargs = 1, complete = "file", desc = "jsonl-engine: ingest a file or folder" })
vim.api.nvim_create_user_command("KbContext", function(opts)
  kb().context(opts.args)
end, { nargs = "+", desc = "jsonl-engine: ranked passages for a query" })
vim.api.nvim_create_user_command("KbPdf", function()
  kb().pdf()
end, { nargs = 0, desc = "jsonl-engine: the PDF path and page of the cited section" })
vim.api.nvim_create_user_command("KbRender", function(opts)
  kb().render(opts.args)
end, { nargs = "?", desc = "jsonl-engine: a PNG of the cited quote on its page, highlighted (kb.render)" })
vim.api.nvim_create_autocmd("VimLeavePre", {
  callback = function()
    if package.loaded["jsonl_engine"] then
      kb().stop()
    end
  end,
})
