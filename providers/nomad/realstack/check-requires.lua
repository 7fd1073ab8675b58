-- check-requires.lua SHARE CLIB FILE...: follows every literal require("x") of the
-- given Lua files (relative to APISIX's folder, the current directory) through the
-- paths APISIX's nginx.conf sets, and lists the modules found nowhere. Optional loads
-- (pcall(require, "x")) are not literal requires and are skipped. Exit 1 if a module
-- outside NOT_NEEDED is missing. Part of benchflow's real-stack scripts.
local share, clib = arg[1], arg[2]
local multiarch = "/usr/lib/x86_64-linux-gnu/lua/5.1/?.so;/usr/lib/aarch64-linux-gnu/lua/5.1/?.so"
local lpath = share .. "/?.lua;" .. share .. "/?/init.lua;./?.lua;./?/init.lua;"
    .. "/usr/share/lua/5.1/?.lua;/usr/share/lua/5.1/?/init.lua;/usr/local/share/lua/5.1/?.lua"
local cpath = clib .. "/?.so;" .. multiarch .. ";/usr/local/lib/lua/5.1/?.so;/usr/lib/lua/5.1/?.so"

-- Provided by LuaJIT or by the nginx Lua module itself.
local builtin = {
    ffi = true, bit = true, jit = true, string = true, table = true, math = true, os = true,
    io = true, coroutine = true, debug = true, package = true, ["table.new"] = true,
    ["table.clear"] = true, ["table.nkeys"] = true, ["table.clone"] = true,
    ["table.isarray"] = true, ["table.isempty"] = true, ["string.buffer"] = true,
    ["jit.profile"] = true, ["jit.opt"] = true, ["jit.util"] = true, ngx = true, ndk = true,
}
-- Required only on paths this stack does not take; each says why.
local NOT_NEEDED = {
    ["resty.events.compat"] = "events.module lua-resty-events (we use lua-resty-worker-events)",
    ["resty.apisix.client"] = "apisix-runtime's nginx module (APISIX checks for it first)",
    ["resty.apisix.upstream"] = "apisix-runtime's nginx module",
    ["resty.apisix.request"] = "apisix-runtime's nginx module",
    ["resty.apisix.response"] = "apisix-runtime's nginx module",
    ["resty.apisix.stream.xrpc.protocol"] = "xRPC stream proxy (stream_plugins are off)",
    ["resty.kubernetes"] = "kubernetes discovery (not configured)",
    ["resty.openssl.kdf"] = "lua-resty-kafka's SASL SCRAM functions (Kafka auth, not used here)",
    ["resty.openssl.hmac"] = "lua-resty-kafka's SASL SCRAM functions (Kafka auth, not used here)",
    ["resty.openssl.digest"] = "lua-resty-kafka's SASL SCRAM functions (Kafka auth, not used here)",
}

local seen, missing, order = {}, {}, {}
local function find(mod)
    if builtin[mod] then return "builtin" end
    local f = package.searchpath(mod, lpath)
    if f then return f end
    local c = package.searchpath(mod, cpath)
    if c then return c end
    -- C modules with a dotted name load from the first part's library (socket.core)
    local base = mod:match("^([^.]+)%.")
    if base and package.searchpath(base, cpath) then return "c" end
    return nil
end

local function scan(file)
    if seen[file] then return end
    seen[file] = true
    local fh = io.open(file, "r")
    if not fh then return end
    local src = fh:read("*a")
    fh:close()
    for line in src:gmatch("[^\n]*") do
        if not line:match("^%s*%-%-") then
            for mod in line:gmatch("require%s*%(?%s*[\"']([%w%._%-]+)[\"']") do
                -- a prefix of a computed name ("apisix.http.router." .. name) is no module
                local where = mod:match("[._]$") and "computed" or find(mod)
                if not where then
                    if not missing[mod] then missing[mod] = file; order[#order + 1] = mod end
                elseif where:match("%.lua$") then
                    scan(where)
                end
            end
        end
    end
end

for i = 3, #arg do scan(arg[i]) end
local bad = 0
for _, mod in ipairs(order) do
    if NOT_NEEDED[mod] then
        print(("check-requires: %s not here, not needed: %s (required by %s)"):format(mod, NOT_NEEDED[mod], missing[mod]))
    else
        print(("check-requires: MISSING %s (required by %s)"):format(mod, missing[mod]))
        bad = bad + 1
    end
end
local n = 0
for _ in pairs(seen) do n = n + 1 end
print(("check-requires: %d files followed, %d modules missing"):format(n, bad))
os.exit(bad == 0 and 0 or 1)
