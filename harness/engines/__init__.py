"""Real engines for the durable runtime profiles: agent cells on Temporal and DBOS themselves.

`harness run --engine real` (and `run_agent(engine="real")`) runs the `temporal` and `dbos`
profiles on the engine: a Temporal dev server (or your cluster) with worker processes, or DBOS
with its system database; a crash fault kills a worker with SIGKILL and the engine resumes the
run on a new one. `simulated` stays the default and the fast path. Nothing here is imported
until a real engine is asked for.
"""
