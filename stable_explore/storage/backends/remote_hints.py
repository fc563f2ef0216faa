"""What an object store's error means for the user: the S3 error code instead of raw XML, and what to set.

obstore reports a refused request as one long text: the request, the status, and the server's XML body.
A user who mistyped a bucket or forgot ``AWS_ALLOW_HTTP`` should read the cause and the fix, not the XML.

>>> explain("GET ... 403 Forbidden: <?xml version='1.0'?><Error><Code>InvalidAccessKeyId</Code></Error>")
'InvalidAccessKeyId: the access key is not known to the server; check AWS_ACCESS_KEY_ID'
"""

from __future__ import annotations

import re

__all__ = ["explain"]

_CODE = re.compile(r"<Code>([^<]{1,80})</Code>")
_MESSAGE = re.compile(r"<Message>([^<]{1,300})</Message>")

_FIXES = {
    "NoSuchBucket": (
        "the bucket does not exist; create it (aws s3 mb, the cloud console, or weed shell's s3.bucket.create "
        "for a local SeaweedFS)"
    ),
    "InvalidAccessKeyId": "the access key is not known to the server; check AWS_ACCESS_KEY_ID",
    "SignatureDoesNotMatch": "the secret key does not match the access key; check AWS_SECRET_ACCESS_KEY",
    "AccessDenied": "these credentials may not do this here; check the keys and the bucket's permissions",
    "ExpiredToken": "the session token has expired; renew the credentials (AWS_SESSION_TOKEN)",
}


def explain(text: str) -> str | None:
    """A short cause and fix for an object store's error text, or None when it is not one we know.

    Parameters
    ----------
    text:
        The error's whole text (all its lines: the XML body is not on the first).
    """
    code = _CODE.search(text)
    if code is not None:
        name = code.group(1)
        fix = _FIXES.get(name)
        if fix is None:
            message = _MESSAGE.search(text)
            return f"{name}: {message.group(1)}" if message else name
        return f"{name}: {fix}"
    if "builder error" in text or ("http://" in text and "allow_http" in text.lower()):
        return "an http:// endpoint needs AWS_ALLOW_HTTP=true (or storage_options={'allow_http': True})"
    if "as boolean" in text:
        return "a boolean setting is not true or false (is AWS_ALLOW_HTTP set to an empty value?)"
    if "403 Forbidden" in text:
        return "403 Forbidden: check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and the bucket's permissions"
    if "404 Not Found" in text and "list" in text.lower():
        return "404 Not Found while listing: does the bucket exist?"
    return None
