"""The admin APIs beyond CreateTopics: DeleteTopics, CreatePartitions, DescribeConfigs,
AlterConfigs and IncrementalAlterConfigs, answered as Kafka answers them (docs/semantics.md
"Admin APIs").

Any broker takes them (Kafka's brokers forward admin requests to the controller, KIP-590): this
one checks what it can with the rules of topic_rules, then hands the change to the control plane
(the broker's delete_topic / create_partitions / alter_topic_configs, set by whoever owns it:
impl/controller/local.py for one broker, impl/controller/client.py in a cluster) and answers when
the controller has decided. The controller pushes the new image to every broker; what a broker
then does with its partitions is Broker.apply_metadata's.

Resource types (Kafka's ConfigResource.Type): TOPIC 2, BROKER 4. Topics are described with every
topic config, its value and its source (DYNAMIC_TOPIC_CONFIG for an override, DEFAULT_CONFIG
otherwise) and altered through the controller; a broker is described with its static settings,
read-only: kafkaref brokers have no dynamic configs, so altering one is refused (INVALID_REQUEST,
as Kafka refuses a config that cannot be updated dynamically). Other types: INVALID_REQUEST.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from kio.schema.errors import ErrorCode

from kafkaref.impl.core.config import DEFAULT_MAX_MESSAGE_BYTES
from kafkaref.impl.core.topic_rules import (
    BROKER_SYNONYMS,
    TOPIC_CONFIG_DEFAULTS,
    check_configs,
    check_new_partitions,
    incremental_configs,
    legal_topic_name,
)

TOPIC, BROKER = 2, 4
# Kafka's ConfigResource types: kafkaref has configs for topics and brokers only; the others
# (BROKER_LOGGER 8, CLIENT_METRICS 16, GROUP 32) are answered INVALID_REQUEST one by one, and
# any other type fails a DescribeConfigs request as a whole, as on Kafka
KNOWN_RESOURCE_TYPES = frozenset({TOPIC, BROKER, 8, 16, 32})
# DescribeConfigs config_source (Kafka's DescribeConfigsResponse.ConfigSource)
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
BOOLEAN, INT, LONG = 1, 3, 5  # ConfigType ids


class Gather:
    """Answers that arrive one by one (some from the controller, later), sent together in the
    request's order once the last one is in."""

    def __init__(self, count: int, finish: Callable[[list], None]):
        self.answers: list = [None] * count
        self.waiting = count
        self.finish = finish

    def put(self, index: int, answer) -> None:
        self.answers[index] = answer
        self.waiting -= 1
        if self.waiting == 0:
            self.finish(self.answers)

    def later(self, index: int, shape: Callable[[ErrorCode, str | None], dict]):
        """A `done(error, message)` for the control plane, filling slot `index`."""
        return lambda error, message: self.put(index, shape(error, message))


class AdminApis:
    def __init__(self, broker):
        self.broker = broker

    def handlers(self) -> dict[int, Callable]:
        return {20: self.delete_topics, 32: self.describe_configs, 33: self.alter_configs,
                37: self.create_partitions, 44: self.incremental_alter_configs}

    # -- DeleteTopics (20) ------------------------------------------------------------------
    def delete_topics(self, request, respond):
        """Unknown topics: UNKNOWN_TOPIC_OR_PARTITION, their names legal or not (Kafka's
        ControllerApis.deleteTopics looks names up, it does not check them); a name twice: one
        INVALID_REQUEST answer for it, with the zero topic id (ControllerApis.deleteTopics); the
        others are deleted by the controller. v6 names each topic by name or by id (KIP-516):
        see _deletions."""
        listed = _deletions(self.broker, request.body)
        names = [name for name, _, refused in listed if refused is None]
        entries = _once_each(listed)
        gather = _gathering(self.broker, request, respond, len(entries), "responses")
        delete = self.broker.delete_topic
        for index, (name, topic_id, refused) in enumerate(entries):
            error, message = refused or self._existing_topic_error(name, names)
            if refused is None and error == ErrorCode.invalid_request:
                topic_id = uuid.UUID(int=0)  # named twice: Kafka answers it without its id

            def shape(error, message, name=name, topic_id=topic_id):
                return {"name": name, "topic_id": topic_id, "error_code": error,
                        "error_message": message}

            if error == ErrorCode.none and delete is None:
                error, message = ErrorCode.not_controller, "no control plane"
            if error != ErrorCode.none:
                gather.put(index, shape(error, message))
            else:
                delete(name, gather.later(index, shape))

    def _existing_topic_error(self, name: str, names) -> tuple[ErrorCode, str | None]:
        """What the controller answers for a topic a request names to change: INVALID_REQUEST
        when named twice, UNKNOWN_TOPIC_OR_PARTITION when it does not exist (whatever the
        name: the controller looks it up and checks nothing else)."""
        if list(names).count(name) > 1:
            return ErrorCode.invalid_request, "Duplicate topic name."
        if self.broker.metadata.topic(name) is None:
            return ErrorCode.unknown_topic_or_partition, f"topic {name} does not exist"
        return ErrorCode.none, None

    def _topic_error(self, name: str, names: list[str]) -> tuple[ErrorCode, str | None]:
        if names.count(name) > 1:
            return ErrorCode.invalid_request, f"topic {name} appears more than once"
        if self.broker.metadata.topic(name) is None:
            if not legal_topic_name(name):
                return ErrorCode.invalid_topic_exception, f"invalid topic name {name!r}"
            return ErrorCode.unknown_topic_or_partition, f"topic {name} does not exist"
        return ErrorCode.none, None

    # -- CreatePartitions (37) --------------------------------------------------------------
    def create_partitions(self, request, respond):
        body = request.body
        names = [t.name for t in body.topics]
        topics = [t for i, t in enumerate(body.topics) if t.name not in names[:i]]
        gather = _gathering(self.broker, request, respond, len(topics), "results")
        create = self.broker.create_partitions
        live = {b.broker_id for b in self.broker.metadata.brokers}
        for index, topic in enumerate(topics):
            def shape(error, message, name=topic.name):
                return {"name": name, "error_code": error, "error_message": message}

            assignment = None if topic.assignments is None else [
                list(a.broker_ids) for a in topic.assignments]
            error, message = self._existing_topic_error(topic.name, names)
            if error == ErrorCode.none:
                meta = self.broker.metadata.topic(topic.name)
                error, message = check_new_partitions(
                    len(meta.partitions), topic.count, len(meta.partitions[0].replicas),
                    assignment, live)
            if error == ErrorCode.none and not body.validate_only and create is None:
                error, message = ErrorCode.not_controller, "no control plane"
            if error != ErrorCode.none or body.validate_only:
                gather.put(index, shape(error, message))
            else:
                create(topic.name, topic.count, assignment, gather.later(index, shape))

    # -- DescribeConfigs (32) ---------------------------------------------------------------
    def describe_configs(self, request, respond):
        """A resource of a type Kafka does not know fails the whole request: every resource is
        answered INVALID_REQUEST (ConfigHelper.handleDescribeConfigsRequest throws for it)."""
        body = request.body
        synonyms = body.include_synonyms  # every advertised version (v1-4)
        if any(r.resource_type not in KNOWN_RESOURCE_TYPES for r in body.resources):
            respond(self.broker._response(request, {"results": [
                {"error_code": ErrorCode.invalid_request, "resource_type": r.resource_type,
                 "resource_name": r.resource_name, "configs": []} for r in body.resources]}))
            return
        results = []
        for resource in body.resources:
            keys = resource.configuration_keys
            error, message, configs = ErrorCode.none, None, []
            if resource.resource_type == TOPIC:
                error, message = self._topic_error(resource.resource_name, [])
                if error == ErrorCode.none:
                    configs = self._topic_configs(resource.resource_name, keys, synonyms)
            elif resource.resource_type == BROKER:
                error, message = self._broker_error(resource.resource_name)
                if error == ErrorCode.none:
                    configs = self._broker_configs(keys, synonyms)
            else:
                error, message = _unsupported_type(resource.resource_type)
            results.append({"error_code": error, "error_message": message,
                            "resource_type": resource.resource_type,
                            "resource_name": resource.resource_name, "configs": configs})
        respond(self.broker._response(request, {"results": results}))

    def _topic_configs(self, name: str, keys, synonyms: bool) -> list[dict]:
        overrides = dict(self.broker.metadata.topic(name).configs)
        entries = []
        for config, (default, kind) in sorted(TOPIC_CONFIG_DEFAULTS.items()):
            if keys is not None and config not in keys:
                continue
            overridden = config in overrides
            value = overrides[config] if overridden else default
            source = DYNAMIC_TOPIC_CONFIG if overridden else DEFAULT_CONFIG
            # Kafka's synonyms: the override, then the broker config it falls back to
            fallback = BROKER_SYNONYMS.get(config)
            chain = ([{"name": config, "value": overrides[config], "source": DYNAMIC_TOPIC_CONFIG}]
                     if overridden else []) + ([
                {"name": fallback, "value": default, "source": DEFAULT_CONFIG}] if fallback else [])
            entries.append(_entry(config, value, False, source, kind,
                                  chain if synonyms else []))
        return entries

    def _broker_error(self, name: str) -> tuple[ErrorCode, str | None]:
        """Kafka: a broker resource names this broker, or is "" (the cluster default)."""
        if name not in ("", str(self.broker.broker_id)):
            return (ErrorCode.invalid_request, f"unexpected broker id, expected "
                    f"{self.broker.broker_id} or an empty string, but received {name!r}")
        return ErrorCode.none, None

    def _broker_configs(self, keys, synonyms: bool) -> list[dict]:
        config = self.broker.config
        static = {
            "broker.id": (str(config.broker_id), INT),
            "auto.create.topics.enable": (str(config.auto_create_topics).lower(), BOOLEAN),
            "num.partitions": (str(config.default_partitions), INT),
            "default.replication.factor": (str(config.default_replication_factor), INT),
            "replica.lag.time.max.ms": (str(config.replica_lag_time_max_ms), LONG),
            "message.max.bytes": (str(DEFAULT_MAX_MESSAGE_BYTES), INT),
            "min.insync.replicas": (TOPIC_CONFIG_DEFAULTS["min.insync.replicas"][0], INT),
            "delete.topic.enable": ("true", BOOLEAN),
        }
        return [_entry(name, value, True, STATIC_BROKER_CONFIG, kind,
                       [{"name": name, "value": value, "source": STATIC_BROKER_CONFIG}]
                       if synonyms else [])
                for name, (value, kind) in sorted(static.items())
                if keys is None or name in keys]

    # -- AlterConfigs (33) and IncrementalAlterConfigs (44) ---------------------------------
    def alter_configs(self, request, respond):
        """Replace a topic's overrides with exactly the given ones (the others go back to their
        defaults), as the legacy AlterConfigs does."""
        def overrides(resource, current):
            configs = [(c.name, c.value) for c in resource.configs]
            if len({n for n, _ in configs}) != len(configs):
                return ErrorCode.invalid_request, "duplicate config names in one resource", None
            if any(value is None for _, value in configs):  # the broker's preprocess
                return ErrorCode.invalid_request, "a null value is not supported", None
            return ErrorCode.none, None, dict(configs)

        self._alter(request, respond, overrides)

    def incremental_alter_configs(self, request, respond):
        """SET / DELETE / APPEND / SUBTRACT on a topic's overrides (KIP-339)."""
        def overrides(resource, current):
            ops = [(c.name, c.config_operation, c.value) for c in resource.configs]
            return incremental_configs(current, ops)

        self._alter(request, respond, overrides)

    def _alter(self, request, respond, overrides):
        body = request.body
        resources = list(body.resources)
        keys = [(r.resource_type, r.resource_name) for r in resources]
        gather = _gathering(self.broker, request, respond, len(resources), "responses")
        alter = self.broker.alter_topic_configs
        for index, resource in enumerate(resources):
            def shape(error, message, resource=resource):
                return {"error_code": error, "error_message": message,
                        "resource_type": resource.resource_type,
                        "resource_name": resource.resource_name}

            error, message, configs = self._alter_check(resource, keys, overrides)
            if error == ErrorCode.none and configs is not None and not body.validate_only and (
                    alter is None):
                error, message = ErrorCode.not_controller, "no control plane"
            if error != ErrorCode.none or body.validate_only or configs is None:
                gather.put(index, shape(error, message))
            else:
                alter(resource.resource_name, configs, gather.later(index, shape))

    def _topic_alter_check(self, resource, overrides):
        """A topic's new overrides, checked in the order Kafka's controller checks them
        (ConfigurationControlManager, ControllerConfigurationValidator): the operations, the
        topic's name (empty: INVALID_REQUEST, illegal: INVALID_TOPIC_EXCEPTION), the configs
        (INVALID_CONFIG), and last that the topic exists (UNKNOWN_TOPIC_OR_PARTITION)."""
        name = resource.resource_name
        topic = self.broker.metadata.topic(name)
        error, message, configs = overrides(resource, dict(topic.configs) if topic else {})
        if error == ErrorCode.none and name == "":
            error, message = ErrorCode.invalid_request, "Default topic resources are not allowed."
        elif error == ErrorCode.none and not legal_topic_name(name):
            error, message = ErrorCode.invalid_topic_exception, f"invalid topic name {name!r}"
        if error == ErrorCode.none:
            error, message = check_configs(configs)
        if error == ErrorCode.none and topic is None:
            error, message = ErrorCode.unknown_topic_or_partition, f"topic {name} does not exist"
        return error, message, (configs if error == ErrorCode.none else None)

    def _alter_check(self, resource, keys, overrides):
        """(error, message, the topic's new overrides or None when nothing is to change)."""
        kind, name = resource.resource_type, resource.resource_name
        if keys.count((kind, name)) > 1:
            return ErrorCode.invalid_request, f"resource {name!r} appears more than once", None
        if kind == TOPIC:
            return self._topic_alter_check(resource, overrides)
        if kind == BROKER:
            error, message = self._broker_error(name)
            if error == ErrorCode.none and resource.configs:
                error, message = (ErrorCode.invalid_request,
                                  "cannot update these configs dynamically: kafkaref brokers "
                                  "take their settings when started (kafkaref broker --help)")
            return error, message, None
        return (*_unsupported_type(kind), None)


def _deletions(broker, body) -> list[tuple[str | None, uuid.UUID, tuple | None]]:
    """(name, topic id, refusal or None) for each topic a DeleteTopics names. v1-5 name topics;
    v6 names each by its name or by its id, never both (INVALID_REQUEST), and an id no topic
    has is UNKNOWN_TOPIC_ID (as 4.3.1 answers, with these messages)."""
    if not hasattr(body, "topics"):
        return [(name, broker._topic_id(name), None) for name in body.topic_names]
    entries = []
    for topic in body.topics:
        name, topic_id = topic.name, topic.topic_id or uuid.UUID(int=0)
        if name is not None and topic.topic_id is not None:
            refused = ErrorCode.invalid_request, "You may not specify both topic name and topic id."
        elif name is None and topic_id not in broker._names_by_id:
            refused = ErrorCode.unknown_topic_id, "This server does not host this topic ID."
        else:
            name = name if name is not None else broker._names_by_id[topic_id]
            topic_id, refused = broker._topic_id(name), None
        entries.append((name, topic_id, refused))
    return entries


def _once_each(names) -> list:
    """The entries in their order, each once (Kafka answers a name given twice once)."""
    return list(dict.fromkeys(names))


def _gathering(broker, request, respond, count: int, field: str) -> Gather:
    if count == 0:
        respond(broker._response(request, {field: []}))
    return Gather(count, lambda answers: respond(broker._response(request, {field: answers})))


def _unsupported_type(resource_type: int) -> tuple[ErrorCode, str]:
    return (ErrorCode.invalid_request, f"unsupported resource type {resource_type}: kafkaref "
            f"has configs for topics ({TOPIC}) and brokers ({BROKER})")


def _entry(name, value, read_only, source, kind, synonyms) -> dict:
    return {"name": name, "value": value, "read_only": read_only, "config_source": source,
            "is_sensitive": False, "synonyms": synonyms, "config_type": kind,
            "documentation": None}


def created_topic_configs(overrides: dict[str, str]) -> list[dict]:
    """Every topic config of a topic with these overrides, as CreateTopics v5+ lists them:
    name, value, its source (an override or the default) and never read-only or sensitive."""
    return [{"name": name, "value": overrides.get(name, default), "read_only": False,
             "config_source": DYNAMIC_TOPIC_CONFIG if name in overrides else DEFAULT_CONFIG,
             "is_sensitive": False}
            for name, (default, _) in sorted(TOPIC_CONFIG_DEFAULTS.items())]
