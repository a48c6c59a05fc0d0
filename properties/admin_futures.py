"""What a real admin client (confluent_kafka's AdminClient) answered, for tests: each future's
result, or the Kafka error code it failed with."""

from __future__ import annotations


def future_results(futures: dict, timeout_s: float = 30) -> dict:
    """Each future's result, or the code of the KafkaError it failed with."""
    import confluent_kafka as ck  # the dev extra's client, not a dependency of kafkaref itself

    out = {}
    for key, future in futures.items():
        try:
            out[key] = future.result(timeout=timeout_s)
        except ck.KafkaException as exc:
            out[key] = exc.args[0].code()
    return out
