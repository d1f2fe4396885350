"""Encryption at rest: upstream's ``EncryptionConfiguration`` applied by a storage decorator that sits
over the durable backend (``storage.EncryptedStorage``), configured by ``--encryption-provider-config``."""
