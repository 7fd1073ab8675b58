-- Stand-in for api7's lua-resty-ctxdump (not available here), written for benchflow's
-- real-stack scripts: keeps ngx.ctx across an internal redirect in the same worker.
-- stash_ngx_ctx() returns a reference (a number, stored in an nginx variable by
-- APISIX); apply_ngx_ctx(ref) puts that ctx back as ngx.ctx, forgets it and returns it.
local ngx = ngx
local tonumber = tonumber
local _M = {}

local stash = {}
local last = 0

function _M.stash_ngx_ctx()
    last = last + 1
    stash[last] = ngx.ctx
    return last
end

function _M.apply_ngx_ctx(ref)
    ref = tonumber(ref)
    if not ref then
        return nil
    end
    local ctx = stash[ref]
    stash[ref] = nil
    if ctx then
        ngx.ctx = ctx
    end
    return ctx
end

return _M
