"""Apache RocketMQ 5.5's ACL 2.0 broker properties and the init Super user they create.

Shared by mq's own ACL 2.0 proof (tests/integration/auth/test_acl2.py) and its comparison with Apache
5.5.0 (tests/reference/toolkit/test_acl2_on_apache5.py), so both start their brokers from the same
broker.conf lines, unchanged, as an Apache user would write them.
"""

from __future__ import annotations

import json

from mqtools.client.credentials import ACCESS_KEY_ENV, SECRET_KEY_ENV
from mqtools.common.security import SessionCredentials

#: initAuthenticationUser (a Super user), also the brokers' innerClientAuthenticationCredentials.
ROOT = SessionCredentials("rocketmq", "root-XYZZY-12345678")

AUTH_PROPS = {
    "authenticationEnabled": "true",
    "authenticationProvider": "org.apache.rocketmq.auth.authentication.provider.DefaultAuthenticationProvider",
    "authenticationMetadataProvider":
        "org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider",
    "authorizationEnabled": "true",
    "authorizationProvider": "org.apache.rocketmq.auth.authorization.provider.DefaultAuthorizationProvider",
    "authorizationMetadataProvider":
        "org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider",
    "initAuthenticationUser": json.dumps({"username": ROOT.access_key, "password": ROOT.secret_key}),
    "innerClientAuthenticationCredentials": json.dumps({"accessKey": ROOT.access_key, "secretKey": ROOT.secret_key}),
    "autoCreateTopicEnable": "false",
}

#: `mq admin` signed as ROOT (credentials from the environment, never the command line).
ROOT_ENV = {ACCESS_KEY_ENV: ROOT.access_key, SECRET_KEY_ENV: ROOT.secret_key}
