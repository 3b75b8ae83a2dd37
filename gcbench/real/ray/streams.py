"""The Ray cluster's jobs of workers that send several messages: a streaming generator per job.

Such a worker runs each job as ``compute_messages``, called with ``num_returns="streaming"``: it yields one
reply per message as soon as the partitions it uses are computed, and each becomes its own Result
(``Result.message``, ``final``). ``ray.wait`` takes the stream beside the plain job references; the job is in
flight until its final reply, and the replies it sent before its worker exited stay delivered.
"""

from __future__ import annotations

from gcbench.cluster import Job


class StreamedJobs:
    """What ``RayCluster`` adds for streamed jobs (it provides ``jobs``, ``actors``, ``_got``, ``_reply``...)."""

    def _stream(self, job: Job):
        """A job of a worker with several messages: a streaming generator, one reply per message."""
        w, row = job.worker, job.row
        method = self.actors[w].compute_messages.options(num_returns="streaming")
        if self.trains:
            straggling, overhead = self.straggling[row][w], self.overhead[row][w]
            return method.remote(job.id, self.weights, straggling, self._exits_itself(job), self.batches[job], overhead)
        return method.remote(job.id, self.busy[row][w], self._exits_itself(job), self.fractions[w])

    def _streamed(self, stream) -> None:
        """The next reply of a job streaming its messages; the job leaves the flight with its final one."""
        job = self.jobs[stream]
        try:
            item = next(stream)
        except StopIteration:  # (ended without a final reply: nothing more comes)
            del self.jobs[stream]
            self._release(job.worker)
            return
        reply = self._got(job, item)
        if reply is None or reply.get("final", True):
            del self.jobs[stream]
            if reply is None:
                self._exited(job)
            else:
                self._reply(job, reply)
            self._release(job.worker)
        else:
            self._schedule(*self._result(job, reply))

    def _take_sent(self, stream) -> None:
        """The replies a streaming job sent before its worker exited; it stays in flight unless it finished."""
        job = self.jobs[stream]
        while self.ray.wait([stream], timeout=0)[0]:
            try:
                reply = self._got(job, next(stream))
            except StopIteration:
                reply = None
            if reply is None:
                return
            if reply.get("final", True):
                del self.jobs[stream]
                self._reply(job, reply)
                return
            self._schedule(*self._result(job, reply))
