"""`mq exporter`: a cluster's figures as Prometheus metrics, named as rocketmq-exporter names them."""
