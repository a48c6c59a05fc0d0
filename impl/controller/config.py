"""Every bound of impl/controller in one module, unit last: the session and heartbeat times, the
channel's limits, how long a broker waits for a change to reach the others."""

# Kafka's broker.session.timeout.ms. A broker silent this long is fenced. The short 1.5 s this
# used to be got healthy brokers fenced on a starved machine (librdkafka's suite, load 12 on 2
# cores; docs/conformance.md), and every fencing moves leaders; tests and the chaos job that
# want fast failover ask for a short timeout explicitly.
DEFAULT_SESSION_TIMEOUT_MS = 9_000

# Shorter than Kafka's broker.heartbeat.interval.ms (2 s) on purpose: the heartbeat's answer is
# also how a broker learns a new metadata image (KRaft brokers fetch the metadata log instead),
# so this bounds how late a broker hears of a new leader or topic.
HEARTBEAT_INTERVAL_MS = 100

# A broker answers created (and deleted) topics once every other live broker has applied them:
# it polls the controller (await_epoch, which also counts as its heartbeat) until each other broker has
# reported that metadata epoch, so a client never meets a leader that does not know its
# partition yet (librdkafka's 0011: the first produce answered UNKNOWN_TOPIC_OR_PARTITION, was
# retried behind later batches, deliveries came out of order). Polled, not awaited: the answers
# carry new images, so two brokers waiting on each other's creations both progress. Bounded: a
# starved broker delays a creation, it does not block it.
PROPAGATION_WAIT_S = 3.0
PROPAGATION_POLL_S = 0.02

# The channel between brokers and the controller (channel.py)
MESSAGE_MAX_BYTES = 64 * 1024 * 1024
BATCH_MAX_MESSAGES = 1000  # messages in one batch (a CreateTopics of 1000 topics: one round trip)
