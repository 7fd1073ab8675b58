-- Stand-in for api7's lua-resty-ngxvar (not available here), written for benchflow's
-- real-stack scripts: the same two functions over plain ngx.var, without its FFI
-- fast path.
--
-- request() must return something non-nil: apisix/core/ctx.lua stores it as
-- ctx.var._request, and a nil there makes every later lookup of _request go through
-- the table's __index again, which recurses until the request answers 500.
local ngx = ngx
local _M = {}

local REQUEST = {} -- one opaque token; fetch reads the current request's ngx.var anyway

function _M.request()
    return REQUEST
end

function _M.fetch(name, _request)
    return ngx.var[name]
end

return _M
