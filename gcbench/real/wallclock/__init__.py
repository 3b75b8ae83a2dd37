"""The wall-clock cluster the Ray and torch backends share: the run's clock (clock.py), the events known ahead of
their time (due_events.py), the bookkeeping of jobs, exits and restarts (wall_cluster.py), and what every worker
runs whatever carries its jobs (job_worker.py; gradient_worker.py, the worker that trains; threads.py, the cores
it computes on). It knows nothing of a run's session or of any one backend."""
