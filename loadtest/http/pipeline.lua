-- wrk script: each write carries `depth` pipelined GET requests (default 16)
-- for the path given as the second argument (default /plaintext).
--   wrk -s loadtest/http/pipeline.lua URL -- 16 /plaintext
init = function(args)
  local depth = tonumber(args[1]) or 16
  local path = args[2] or "/plaintext"
  local r = {}
  for i = 1, depth do
    r[i] = wrk.format("GET", path)
  end
  req = table.concat(r)
end

request = function()
  return req
end
