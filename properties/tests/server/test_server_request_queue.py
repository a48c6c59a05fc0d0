"""The request queue's backpressure: a network thread putting into a full queue waits (looking
at the broker's stop every PUT_RETRY_S) until an I/O thread takes a request, then its request
is queued: none is dropped, however long the wait."""

import threading

from kafkaref.impl.server.request_queue import RequestQueue


def test_a_put_into_a_full_queue_waits_and_is_queued_once_there_is_room():
    requests, stopping = RequestQueue(1), threading.Event()
    requests.put("first", stopping)
    putter = threading.Thread(target=requests.put, args=("second", stopping))
    putter.start()
    putter.join(RequestQueue.PUT_RETRY_S * 3)  # several retries while the queue stays full
    assert putter.is_alive(), "the put gave up on a full queue"
    assert requests.get(1) == "first"
    putter.join(5)
    assert requests.get(1) == "second"


def test_a_put_waiting_on_a_full_queue_ends_with_the_brokers_stop():
    requests, stopping = RequestQueue(1), threading.Event()
    requests.put("first", stopping)
    putter = threading.Thread(target=requests.put, args=("second", stopping))
    putter.start()
    stopping.set()
    putter.join(5)
    assert not putter.is_alive()
