"""Node providers for Ray's autoscaler on one machine: Ray's fake multi-node provider (each
node a real raylet started by the autoscaler's monitor), and subclasses of it that fail the
way clouds do. Loaded by the head's monitor through `provider.type: external` and
`provider.module`, so this file must be importable there (tests/ on the head's PYTHONPATH).

Behaviour switches live in the provider config (the cluster YAML the monitor reads):
- `rldoctor_fail_types: {type: "Category: description"}`: every launch of these node types
  raises Ray's NodeLaunchException with that category and description (a cloud's quota error);
- `rldoctor_ghost_types: [type, ...]`: launches of these node types are recorded (the node
  is "up" for the autoscaler) but no raylet ever starts: a node that never joins.
"""

from __future__ import annotations

from ray.autoscaler._private.fake_multi_node.node_provider import FakeMultiNodeProvider
from ray.autoscaler.node_launch_exception import NodeLaunchException
from ray.autoscaler.tags import (NODE_KIND_WORKER, STATUS_UP_TO_DATE, TAG_RAY_NODE_KIND,
                                 TAG_RAY_NODE_NAME, TAG_RAY_NODE_STATUS, TAG_RAY_USER_NODE_TYPE)


class FaultyProvider(FakeMultiNodeProvider):
    def create_node_with_resources_and_labels(self, node_config, tags, count, resources, labels):
        failure = (self.provider_config.get("rldoctor_fail_types") or {}).get(
            tags.get(TAG_RAY_USER_NODE_TYPE))
        if failure:
            category, _, description = failure.partition(": ")
            raise NodeLaunchException(category, description, None)
        if tags.get(TAG_RAY_USER_NODE_TYPE) in (self.provider_config.get("rldoctor_ghost_types") or []):
            with self.lock:
                for _ in range(count if self._launch_multiple else 1):
                    next_id = self._next_hex_node_id()
                    self._nodes[next_id] = {"tags": {
                        **tags, TAG_RAY_NODE_KIND: NODE_KIND_WORKER,
                        TAG_RAY_NODE_NAME: next_id, TAG_RAY_NODE_STATUS: STATUS_UP_TO_DATE},
                        "node": None}
            return
        return super().create_node_with_resources_and_labels(
            node_config, tags, count, resources, labels)

    def _terminate_node(self, node):
        if node.get("node") is not None:
            super()._terminate_node(node)
