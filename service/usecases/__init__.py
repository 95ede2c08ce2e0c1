"""The service's use cases: plan, decide, settle, correct, create an agent, add and search experiences,
read values, refit.

Each is a function of (services, tenant, the agent's id, the body, the request's idempotency guard)
that returns the public model. Route handlers parse, call one of these and return; the transaction,
the agent's lock and the idempotency key are opened once, by :func:`service.usecases.unit.agent_write`.
"""
