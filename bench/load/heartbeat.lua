-- wrk script for the heartbeat scenario: every request carries the next fellow's real node token
-- (rotating through the seeded fleet, so a fleet of 100,000 is 100,000 distinct callers) and a
-- realistic body: status, step, loss, byte counters and four GPUs.
--   wrk -t1 -c64 -d10s -s bench/load/heartbeat.lua http://127.0.0.1:PORT -- tokens.txt [START]
-- START is where in the fleet to begin: the runner passes where the previous round stopped, so
-- over many rounds every fellow beats at the same cadence and none goes stale or offline.
local tokens = {}
local i = 0
local step = 0
local threads = {}
local counter = 0

local head = '{"status":"running","step":'
local tail = ',"loss":1.2345,"bytes_sent":123456789,"bytes_received":987654321,"hardware":{"gpus":['
for g = 0, 3 do
  if g > 0 then tail = tail .. ',' end
  tail = tail .. '{"index":' .. g .. ',"name":"NVIDIA A100-SXM4-80GB","memory_total_mb":81920,"memory_free_mb":40960,"utilization_pct":87.5}'
end
tail = tail .. '],"cpu_pct":37.5,"mem_free_mb":120000}}'

function setup(thread)
  -- Each thread starts at its own place in the fleet, so threads do not send the same fellow.
  thread:set('id', counter)
  counter = counter + 1
  table.insert(threads, thread)
end

function init(args)
  for line in io.lines(args[1]) do
    if #line > 0 then tokens[#tokens + 1] = line end
  end
  i = ((tonumber(args[2]) or 0) + (id or 0) * 7919) % #tokens
end

function request()
  i = i % #tokens + 1
  step = step + 1
  return wrk.format('POST', '/api/v1/workers/heartbeat', {
    ['Authorization'] = 'Bearer ' .. tokens[i],
    ['Content-Type'] = 'application/json',
  }, head .. step .. tail)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"errors_connect":%d,"errors_read":%d,"errors_write":%d,"errors_status":%d,"errors_timeout":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
