"""Authentication for the broker's listeners: TLS (:mod:`.tls`), SASL (:mod:`.sasl`:
PLAIN, SCRAM-SHA-256/512 from :mod:`.scram`), durable SCRAM credentials
(:mod:`.scram_store`) and Kafka's listener model (:mod:`.listeners`).

Every connection carries a principal for a later authorizer: ``User:ANONYMOUS`` on
PLAINTEXT (and SSL without a client certificate), the client certificate's subject
(``User:CN=...``) on SSL with client auth, ``User:<name>`` after SASL.
"""
