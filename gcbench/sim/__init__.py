"""The simulator: an event engine (a heap calendar, for asynchronous policies) and the vectorised synchronous
engine, over the shared models and policies."""
