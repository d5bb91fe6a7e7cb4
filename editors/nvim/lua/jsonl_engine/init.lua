-- jsonl-engine for Neovim 0.7+: one long-lived daemon per editor (jobstart), :KbAsk, :KbIngest, :KbContext,
-- :KbPdf, :KbRender.
-- The protocol is PROTOCOL.md: one JSON request per line on stdin, events per request id on stdout.
local M = {}

local defaults = {
  cmd = { "jsonl-engine" }, -- the daemon command (a list); --kb is added when `kb` is set
  kb = nil, -- KB directory; nil: $JSONL_ENGINE_KB or the daemon's default
  llm = nil, -- :KbAsk with kb.answer (true), kb.synthesize (false), or by whether a reader is configured (nil)
  max_chars = 2000, -- kb.synthesize's answer budget
  context_limit = 8, -- :KbContext items
  pdf_viewer = nil, -- e.g. { "zathura", "--page={page}", "{path}" }; :KbPdf runs it
  image_viewer = nil, -- e.g. { "xdg-open", "{path}" }; :KbRender runs it on each PNG
  render_scale = 2, -- :KbRender's pixels per PDF point
  timeout_ms = 30000, -- synchronous helpers (fetching cited sections)
}
M.config = vim.deepcopy(defaults)

local ns = vim.api.nvim_create_namespace("jsonl_engine")
local state = { job = nil, ready = false, queue = {}, pending = {}, next_id = 0, partial = "", stderr = {}, caps = nil }
M._state = state
M.last = nil -- the last :KbAsk: { question, method, result, citations, lines, win, buf }

local function notify(msg, level)
  vim.schedule(function()
    vim.notify("jsonl-engine: " .. msg, level or vim.log.levels.INFO)
  end)
end

local function guard(fn)
  -- every callback: a Lua error becomes a notification, never a traceback
  return function(...)
    local ok, err = pcall(fn, ...)
    if not ok then
      notify(tostring(err), vim.log.levels.ERROR)
    end
  end
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(defaults), opts or {})
  vim.cmd("highlight default link KbQuote IncSearch")
end

-- ---- the daemon --------------------------------------------------------------------------------------------

local function fail_all(code, message)
  local pending = state.pending
  state.pending = {}
  for _, req in pairs(pending) do
    req.error = { code = code, message = message }
    vim.schedule(function()
      guard(req.on_done)(req.error, req.results)
    end)
  end
end

local function handle_line(line)
  if line == "" then
    return
  end
  local ok, ev = pcall(vim.json.decode, line)
  if not ok or type(ev) ~= "table" then
    return
  end
  if ev.event == "ready" then
    state.ready = true
    for _, queued in ipairs(state.queue) do
      vim.fn.chansend(state.job, queued)
    end
    state.queue = {}
    return
  end
  if ev.id == nil or ev.id == vim.NIL then
    if ev.event == "error" and type(ev.error) == "table" then
      notify(tostring(ev.error.code) .. ": " .. tostring(ev.error.message), vim.log.levels.ERROR)
    end
    return
  end
  local req = state.pending[tostring(ev.id)]
  if not req then
    return
  end
  if ev.event == "progress" and req.on_progress then
    guard(req.on_progress)(ev.data)
  elseif ev.event == "delta" and req.on_delta then
    guard(req.on_delta)(ev.data)
  elseif ev.event == "result" then
    table.insert(req.results, ev.data)
    if req.on_result then
      guard(req.on_result)(ev.data)
    end
  elseif ev.event == "error" then
    req.error = ev.error
  elseif ev.event == "done" then
    state.pending[tostring(ev.id)] = nil
    vim.schedule(function() -- outside the job callback: on_done may open windows or wait for more requests
      guard(req.on_done)(req.error, req.results)
    end)
  end
end

local function start()
  if state.job then
    return true
  end
  local cmd = vim.deepcopy(M.config.cmd)
  if type(cmd) == "string" then
    cmd = { cmd }
  end
  if M.config.kb then
    vim.list_extend(cmd, { "--kb", M.config.kb })
  end
  state.ready, state.queue, state.partial, state.stderr = false, {}, "", {}
  local ok, job = pcall(vim.fn.jobstart, cmd, {
    on_stdout = function(_, data)
      data[1] = state.partial .. data[1]
      state.partial = data[#data]
      for i = 1, #data - 1 do
        handle_line(data[i])
      end
    end,
    on_stderr = function(_, data)
      for _, l in ipairs(data) do
        if l ~= "" then
          table.insert(state.stderr, l)
          if #state.stderr > 50 then
            table.remove(state.stderr, 1)
          end
        end
      end
    end,
    on_exit = function(_, code)
      state.job, state.ready = nil, false
      local tail = state.stderr[#state.stderr] or ""
      if next(state.pending) ~= nil or code ~= 0 then
        notify("the daemon exited (" .. code .. ")" .. (tail ~= "" and (": " .. tail) or ""), vim.log.levels.ERROR)
      end
      fail_all("daemon_exited", "the daemon exited (" .. code .. ")")
    end,
  })
  if not ok or job <= 0 then
    notify("cannot start " .. table.concat(cmd, " ") .. " (is it on PATH? see :help jsonl-engine-setup)",
      vim.log.levels.ERROR)
    return false
  end
  state.job = job
  return true
end

--- Send one request. handlers: on_done(err, results) (required), on_progress(data), on_delta(data), on_result(data).
--- Returns the request id, or nil when the daemon cannot start.
function M.request(method, params, handlers)
  if not start() then
    return nil
  end
  state.next_id = state.next_id + 1
  local id = "nv" .. state.next_id
  state.pending[id] = {
    results = {},
    on_done = handlers.on_done,
    on_progress = handlers.on_progress,
    on_delta = handlers.on_delta,
    on_result = handlers.on_result,
  }
  local line = vim.json.encode({ id = id, method = method, params = params or vim.empty_dict() }) .. "\n"
  if state.ready then
    vim.fn.chansend(state.job, line)
  else
    table.insert(state.queue, line)
  end
  return id
end

--- Synchronous request (waits, processing events): returns err, results.
function M.request_sync(method, params, timeout_ms)
  local done, err, results = false, nil, nil
  local id = M.request(method, params, {
    on_done = function(e, r)
      done, err, results = true, e, r
    end,
  })
  if not id then
    return { code = "daemon_exited", message = "the daemon is not running" }, {}
  end
  if not vim.wait(timeout_ms or M.config.timeout_ms, function()
    return done
  end, 10) then
    M.cancel(id)
    return { code = "timeout", message = method .. " took longer than " .. (timeout_ms or M.config.timeout_ms) .. " ms" }, {}
  end
  return err, results
end

function M.cancel(id)
  if state.job and state.ready then
    vim.fn.chansend(state.job, vim.json.encode({ id = id .. "-cancel", method = "cancel", params = { target = id } }) .. "\n")
  end
end

function M.stop()
  if state.job then
    vim.fn.chanclose(state.job, "stdin") -- EOF: the daemon finishes and exits 0
  end
end

local function report(err)
  notify(tostring(err.code) .. ": " .. tostring(err.message), vim.log.levels.ERROR)
end

-- ---- text helpers ------------------------------------------------------------------------------------------

--- (row, byte col), both 0-based, of a character offset (Python str index) into text split at "\n".
function M.position(lines, offset)
  local remaining = offset
  for row, line in ipairs(lines) do
    local chars = vim.str_utfindex(line)
    if remaining <= chars then
      return row - 1, vim.str_byteindex(line, remaining)
    end
    remaining = remaining - chars - 1 -- the "\n"
  end
  local last = lines[#lines] or ""
  return math.max(#lines - 1, 0), #last
end

local function one_line(text)
  return (tostring(text or ""):gsub("%s+", " "))
end

local function plain(value) -- JSON null (vim.NIL, userdata that vim.deepcopy of 0.7 refuses) as nil
  if value == vim.NIL then
    return nil
  end
  return value
end

local function spans(pages) -- a quote's pages as { page, start, end } (kb.render's span; boxes left out)
  local out = {}
  for _, p in ipairs(plain(pages) or {}) do
    table.insert(out, { page = p.page, start = p.start, ["end"] = p["end"] })
  end
  return out
end

--- citations of a kb.synthesize or kb.answer result, in one shape
function M.citations(method, result)
  local out = {}
  if method == "kb.synthesize" then
    for _, c in ipairs(result.claims or {}) do
      table.insert(out, { marker = c.id, document_id = c.document_id, document_title = c.document_title,
        section_id = c.section_id, page = c.page, quote = c.text, quote_start = c.quote_start, quote_end = c.quote_end,
        pages = spans(c.pages), boxes_status = plain(c.boxes_status) })
    end
  else
    for _, c in ipairs(result.citations or {}) do
      table.insert(out, { marker = c.section_id, document_id = c.document_id, document_title = c.document_title,
        section_id = c.section_id, page = c.page_start, quote = c.quote, quote_start = c.quote_start,
        quote_end = c.quote_end, pages = spans(c.pages), boxes_status = plain(c.boxes_status) })
    end
  end
  return out
end

--- answer text with its markers as [1], [2]... (order of first use); citations numbered the same way
function M.renumber(answer, cites)
  local by_marker, numbers, order = {}, {}, {}
  for _, c in ipairs(cites) do
    if not by_marker[c.marker] then
      by_marker[c.marker] = c
    end
  end
  local function number(marker)
    if not numbers[marker] then
      table.insert(order, marker)
      numbers[marker] = #order
    end
    return numbers[marker]
  end
  local text = (answer or ""):gsub("%[([^%[%]%s]+)%]", function(marker)
    if by_marker[marker] then
      return "[" .. number(marker) .. "]"
    end
  end)
  for _, c in ipairs(cites) do
    number(c.marker)
  end
  local numbered = {}
  for n, marker in ipairs(order) do
    local c = vim.deepcopy(by_marker[marker])
    c.n = n
    numbered[n] = c
  end
  return text, numbered
end

local function float(lines, title)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.api.nvim_buf_set_option(buf, "modifiable", false)
  vim.api.nvim_buf_set_option(buf, "bufhidden", "wipe")
  vim.api.nvim_buf_set_var(buf, "kb_title", title)
  local width = math.max(20, math.min(100, vim.o.columns - 4))
  local height = 0
  for _, l in ipairs(lines) do
    height = height + math.max(1, math.ceil(vim.fn.strdisplaywidth(l) / width))
  end
  height = math.max(1, math.min(height, vim.o.lines - 4))
  local win = vim.api.nvim_open_win(buf, true, {
    relative = "editor",
    width = width,
    height = height,
    row = math.max(0, math.floor((vim.o.lines - height) / 2) - 1),
    col = math.floor((vim.o.columns - width) / 2),
    style = "minimal",
    border = "rounded",
  })
  vim.api.nvim_win_set_option(win, "wrap", true)
  vim.api.nvim_win_set_option(win, "linebreak", true)
  for _, key in ipairs({ "q", "<Esc>" }) do
    vim.api.nvim_buf_set_keymap(buf, "n", key, "<cmd>close<CR>", { nowait = true, noremap = true, silent = true })
  end
  return win, buf
end

-- ---- cited sections: scratch buffers with the quotes highlighted ------------------------------------------

--- The scratch buffer of a cited section (fetched once per :KbAsk), its quote highlighted with an extmark.
--- Returns buf, row, col (0-based start of the quote) or nil and an error.
function M.open_citation_buffer(c, paths)
  local name = "kb://" .. c.section_id
  local buf = vim.fn.bufnr(name)
  if buf == -1 then
    local err, results = M.request_sync("kb.read", { section_id = c.section_id })
    if err then
      return nil, err
    end
    local text = results[1].text or ""
    buf = vim.api.nvim_create_buf(true, true)
    vim.api.nvim_buf_set_name(buf, name)
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(text, "\n", { plain = true }))
    vim.api.nvim_buf_set_option(buf, "modifiable", false)
    vim.api.nvim_buf_set_option(buf, "bufhidden", "hide")
  end
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  if c.quote_start < 0 then
    return buf, 0, 0 -- an unverified kb.answer quote: no offsets to highlight
  end
  local srow, scol = M.position(lines, c.quote_start)
  local erow, ecol = M.position(lines, c.quote_end)
  vim.api.nvim_buf_set_extmark(buf, ns, srow, scol, { end_row = erow, end_col = ecol, hl_group = "KbQuote" })
  vim.api.nvim_buf_set_var(buf, "kb_pdf", { path = (paths or {})[c.document_id] or vim.NIL, page = c.page,
    n = c.n, document_id = c.document_id, pages = c.pages, boxes_status = c.boxes_status or vim.NIL })
  return buf, srow, scol
end

local function document_paths()
  local err, results = M.request_sync("kb.documents", vim.empty_dict())
  local paths = {}
  if not err then
    for _, d in ipairs(results[1].documents or {}) do
      if d.path ~= vim.NIL then
        paths[d.document_id] = d.path
      end
    end
  end
  return paths
end

--- :KbPdf: the PDF path and page of the cited section in the current buffer; runs config.pdf_viewer if set
function M.pdf()
  local ok, pdf = pcall(vim.api.nvim_buf_get_var, 0, "kb_pdf")
  if not ok then
    notify("not a cited section (open one from :KbAsk's quickfix list)", vim.log.levels.WARN)
    return
  end
  if pdf.path == vim.NIL then
    notify("no file for this document (it was ingested as text); page " .. pdf.page)
    return
  end
  if M.config.pdf_viewer then
    local cmd = {}
    for _, part in ipairs(M.config.pdf_viewer) do
      local arg = part:gsub("{path}", pdf.path):gsub("{page}", tostring(pdf.page))
      table.insert(cmd, arg)
    end
    vim.fn.jobstart(cmd, { detach = true })
  end
  notify(pdf.path .. "  page " .. pdf.page)
end

--- :KbRender [n]: kb.render of the cited quote (citation n of the last :KbAsk, else the cited section in the
--- current buffer): a PNG per page it spans, cropped around its highlighted boxes, written into the KB's cache
--- directory; notifies each path and runs config.image_viewer on it if set. M.last_render: { n, paths }.
function M.render(n)
  local c
  if n ~= nil and n ~= "" then
    c = M.last and M.last.citations[tonumber(n)]
    if not c then
      notify("no citation [" .. tostring(n) .. "] in the last :KbAsk", vim.log.levels.WARN)
      return
    end
  else
    local ok, cited = pcall(vim.api.nvim_buf_get_var, 0, "kb_pdf")
    if not ok then
      notify("not a cited section (open one from :KbAsk's quickfix list, or give :KbRender a number)",
        vim.log.levels.WARN)
      return
    end
    c = cited
  end
  if c.boxes_status ~= "ok" then
    local why = (c.boxes_status == nil or c.boxes_status == vim.NIL) and "no boxes" or c.boxes_status
    notify("no picture for [" .. tostring(c.n) .. "]: " .. why .. (why == "not_pdf" and " (a text document)" or ""))
    return
  end
  local render = { n = c.n, paths = {} }
  M.last_render = nil
  local left = #c.pages
  for _, where in ipairs(c.pages) do
    M.request("kb.render", { document_id = c.document_id, page = where.page, start = where.start,
      ["end"] = where["end"], crop = true, scale = M.config.render_scale, output = "file" }, {
      on_done = function(err, results)
        left = left - 1
        if err then
          report(err)
        else
          local path = results[1].path
          table.insert(render.paths, path)
          notify("rendered [" .. tostring(c.n) .. "] p. " .. where.page .. ": " .. path)
          if M.config.image_viewer then
            local cmd = {}
            for _, part in ipairs(M.config.image_viewer) do
              table.insert(cmd, (part:gsub("{path}", path)))
            end
            vim.fn.jobstart(cmd, { detach = true })
          end
        end
        if left == 0 then
          M.last_render = render
        end
      end,
    })
  end
end

-- ---- commands ----------------------------------------------------------------------------------------------

local function use_llm()
  if M.config.llm ~= nil then
    return M.config.llm
  end
  if state.caps == nil then
    local err, results = M.request_sync("capabilities", vim.empty_dict())
    if err then
      return false
    end
    state.caps = results[1]
  end
  return #(state.caps.readers or {}) > 0
end

local function show_answer(question, method, result)
  local cites = M.citations(method, result)
  local text, numbered = M.renumber(result.answer, cites)
  local lines = {}
  if text == "" then
    table.insert(lines, "(no answer: nothing in the KB matched)")
  else
    vim.list_extend(lines, vim.split(text, "\n", { plain = true }))
  end
  if method == "kb.synthesize" and result.gaps and #result.gaps > 0 then
    table.insert(lines, "not found: " .. table.concat(result.gaps, ", "))
  end
  if #numbered > 0 then
    table.insert(lines, "")
  end
  local paths = #numbered > 0 and document_paths() or {}
  local items = {}
  for _, c in ipairs(numbered) do
    local entry = string.format('[%d] %s, p. %s: "%s"', c.n, c.document_title, c.page, one_line(c.quote))
    table.insert(lines, entry)
    local buf, row, col = M.open_citation_buffer(c, paths)
    if buf then
      local where = paths[c.document_id] and (" (" .. paths[c.document_id] .. " p. " .. c.page .. ")") or ""
      table.insert(items, { bufnr = buf, lnum = row + 1, col = col + 1,
        text = string.format("[%d] %s, p. %s%s: %s", c.n, c.document_title, c.page, where, one_line(c.quote)) })
    else
      report(row)
    end
  end
  vim.fn.setqflist({}, " ", { title = "KbAsk: " .. question, items = items })
  local win, buf = float(lines, "KbAsk")
  M.last = { question = question, method = method, result = result, citations = numbered, lines = lines,
    win = win, buf = buf, items = items }
end

function M.ask(question)
  if question == nil or question:match("^%s*$") then
    notify("usage: :KbAsk {question}", vim.log.levels.WARN)
    return
  end
  local method = use_llm() and "kb.answer" or "kb.synthesize"
  local params = { query = question }
  if method == "kb.synthesize" then
    params.max_chars = M.config.max_chars
  else
    params.stream = false
  end
  vim.api.nvim_echo({ { "jsonl-engine: asking…" } }, false, {})
  M.request(method, params, {
    on_done = function(err, results)
      if err then
        return report(err)
      end
      show_answer(question, method, results[#results])
    end,
  })
end

function M.ingest(path)
  if path == nil or path == "" then
    notify("usage: :KbIngest {path}", vim.log.levels.WARN)
    return
  end
  local full = vim.fn.fnamemodify(vim.fn.expand(path), ":p")
  local added, skipped, failed = 0, 0, {}
  M.request("kb.ingest", { paths = { full } }, {
    on_progress = function(p)
      local count = (p.done ~= nil and p.done ~= vim.NIL and p.total ~= nil and p.total ~= vim.NIL)
          and string.format(" %d/%d", p.done, p.total) or ""
      vim.api.nvim_echo({ { "jsonl-engine: " .. tostring(p.stage) .. count .. " " .. one_line(p.message) } }, false, {})
    end,
    on_result = function(r)
      if r.error ~= vim.NIL and r.error ~= nil then
        table.insert(failed, (r.path ~= vim.NIL and r.path or "?") .. ": " .. tostring(r.error.message))
      elseif r.skipped then
        skipped = skipped + 1
      else
        added = added + 1
      end
    end,
    on_done = function(err)
      local summary = string.format("ingested %s: %d added, %d skipped, %d failed", path, added, skipped, #failed)
      if err then
        return report(err)
      end
      if #failed > 0 then
        notify(summary .. "\n" .. table.concat(failed, "\n"), vim.log.levels.WARN)
      else
        notify(summary)
      end
    end,
  })
end

function M.context(query)
  if query == nil or query:match("^%s*$") then
    notify("usage: :KbContext {query}", vim.log.levels.WARN)
    return
  end
  M.request("kb.context", { query = query, limit = M.config.context_limit }, {
    on_done = function(err, results)
      if err then
        return report(err)
      end
      local data = results[1]
      local lines = {}
      for i, item in ipairs(data.items or {}) do
        table.insert(lines, string.format("%d. %s — %s, p. %d-%d  (%s)", i, item.title, item.document_title,
          item.page_start, item.page_end, item.section_id))
        table.insert(lines, "   " .. one_line(item.snippet))
      end
      if #lines == 0 then
        lines = { "(nothing found" .. ((data.reason ~= vim.NIL and data.reason) and (": " .. data.reason) or "") .. ")" }
      end
      local win, buf = float(lines, "KbContext")
      M.last_context = { lines = lines, win = win, buf = buf, result = data }
    end,
  })
end

return M
