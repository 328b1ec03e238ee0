-- Argo CD's health of a shimkit Shim (containerd.x-k8s.io/v1alpha1), read
-- from the status the operator writes: Progressing until the operator has
-- observed the current generation and while nodes change; Suspended while
-- rolloutStrategy.paused holds the rollout; Degraded when it can make no
-- progress (Stalled: a failed node halts the rollout, a refused spec, no
-- node to install) or a node failed; Healthy once Ready.
local hs = {}
local function cond(t)
  if obj.status ~= nil and obj.status.conditions ~= nil then
    for _, c in ipairs(obj.status.conditions) do
      if c.type == t then
        return c
      end
    end
  end
  return nil
end
local function message(c, default)
  if c ~= nil and c.message ~= nil and c.message ~= "" then
    return c.message
  end
  return default
end

local generation = obj.metadata.generation
if obj.status == nil or obj.status.observedGeneration == nil or (generation ~= nil and obj.status.observedGeneration < generation) then
  hs.status = "Progressing"
  hs.message = "Waiting for the shimkit operator to observe the Shim's generation " .. tostring(generation)
  return hs
end
local ready, stalled, degraded = cond("Ready"), cond("Stalled"), cond("Degraded")
if obj.metadata.deletionTimestamp ~= nil then
  hs.status = "Progressing"
  hs.message = message(ready, "Removing the Shim from its nodes")
  return hs
end
if obj.spec.rolloutStrategy ~= nil and obj.spec.rolloutStrategy.paused == true and (ready == nil or ready.status ~= "True") then
  hs.status = "Suspended"
  hs.message = message(ready, "The rollout is paused (spec.rolloutStrategy.paused)")
  return hs
end
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = message(stalled, stalled.reason)
  return hs
end
if degraded ~= nil and degraded.status == "True" then
  hs.status = "Degraded"
  hs.message = message(degraded, degraded.reason)
  return hs
end
if ready ~= nil and ready.status == "True" then
  hs.status = "Healthy"
  hs.message = message(ready, "Rolled out")
  return hs
end
hs.status = "Progressing"
hs.message = message(ready, "Rolling out")
return hs
