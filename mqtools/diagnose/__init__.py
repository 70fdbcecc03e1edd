"""`mq admin diagnose`: verdicts that name why a group lags or a broker is busy, with the figures that show it.

Sans-IO judges (group.py, broker.py) take samples a collector read through the admin API (collect.py) and a
clock's readings; they return models that own their JSON and, beside each model, the renderer of its document
(group_diagnosis_view, broker_diagnosis_view, cluster_diagnosis_view).
"""
