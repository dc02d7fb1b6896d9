"""Who asked for it: Kafka's authorizer log (``kafka.authorizer.logger``) and request log (``kafka.request.logger``),
read line by line into typed records (docs/how-to/requests.md: which Kafka release prints what)."""
