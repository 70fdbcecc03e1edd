"""ACL 2.0's model and decisions, sans-IO: users, ACLs and their policies (model), the signature
(signature) and authentication and authorization (policy). The broker's auth service and the gRPC proxy's
pipelines both decide with them."""
