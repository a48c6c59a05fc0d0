"""kafkaref.model: the executable reference model of the Kafka data plane (see MODEL.md).

Library API (what properties/ and chaos/ use):

    from kafkaref.model.api import ReferenceModel, replica_fetch_for
    from kafkaref.model.config import ClusterConfig, Bug
    from kafkaref.model.events import Produce, Fetch, ListOffsets, ReplicaFetch, Tick, \
        CrashBroker, RestartBroker, Elect, CommitIsrChange, Flush
    from kafkaref.model.step import step                 # the pure transition function
    from kafkaref.model.properties import CLIENT_PROPERTIES, Ghost, observe
    from kafkaref.model.refinement import image, check_trace, image_violations
    from kafkaref.model.render import render_state, diff_states
"""
