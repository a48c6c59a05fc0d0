"""The control plane: a deliberately small stand-in for KRaft.

What it does: broker registration and liveness (heartbeats with a session timeout), topic
creation with replica assignment, topic deletion, adding partitions and altering topic configs
(impl/controller/topic_changes.py), leader and ISR per partition, clean elections from the ISR
when a leader's broker dies (unclean only when configured), ISR changes requested by leaders
(AlterPartition-like, accepted only for the current leader epoch), and the resulting metadata
image pushed to every broker (each image carries an epoch; brokers ignore older ones).

What it simplifies relative to KRaft:
- one controller, not a Raft quorum: its state is a single in-memory image (plus an optional
  JSON snapshot file), so a controller crash is not survived by failover;
- metadata is pushed as whole images, not as a replicated log of records with offsets;
  brokers never replay history, they adopt the newest image;
- no broker epochs, fencing of zombie brokers is by session timeout only;
- no partition reassignment, no preferred-leader rebalancing, no ELR (KIP-966) set; the hw
  gating of KIP-966 is done by the partition leader itself;
- topics have ids (a random UUID each, KIP-516) inside the images and in partition directories,
  so a topic deleted and created again is another topic; on the wire topics go by name only (the
  advertised Metadata and DeleteTopics versions predate ids).

`local.LocalController` runs inside one broker process (single-broker mode).
"""
