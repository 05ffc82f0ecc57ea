"""Secrets of real shapes, made up, that the tests of a wrap's cut (errors.LinesRedactor, the follows, the log writer,
the host's filter) cut at every position: each case is the text before the secret, the secret, and the text after."""

from __future__ import annotations

HF = "hf_" + "Zq9XwV8uT7sR6qP5oN4mL3kJ2iH1gF0eDc"  # 'hf_' and 34: a Hugging Face token's shape, made up
YA = "ya29." + "a0AfH6SMBxQz9WvUtSrQpOnMlKjIhGfEdCbA0123456789-_Zy"  # a Google OAuth access token's shape, made up
# a JWT (RFC 7519 section 3.1's example header, {"alg":"HS256","typ":"JWT"}; the claims {"sub":"1234567890"}, made up),
# and HS256's 43 base64url characters of signature (RFC 7518 section 3.2: 32 bytes)
JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.Qz9XwV8uT7sR6qP5oN4mL3kJ2iH1gF0eDcBaZyXwVuT"
OPAQUE = "Qz9XwV8uT7sR6qP5oN4mL3kJ2iH1g"  # a bearer token of no shape (vLLM's --api-key takes any text)
SK = "sk-proj-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0UvWxYz-_AbCdEfGh"  # an OpenAI project key's shape, made up

CASES = {
    "hf": ("INFO using token ", HF, " for the download"),
    "bearer": ("DEBUG send: b'GET /v1/models\\r\\nAuthorization: Bearer ", OPAQUE, " done"),
    "ya29": ("refreshed access_token ", YA, " expires in 3599 s"),
    "jwt": ("INFO client assertion ", JWT, " sent"),
    # a URL's password (errors._URL_PASSWORD): a pip index behind basic auth, the password made up
    "url": ("pip install --index-url https://deploy:", "Pa55w0rd-Zq9XwV8uT7sR6", "@pypi.example.com/simple torch"),
}
# a private key's PEM block (RFC 7468 section 2), its body two lines of base64, made up
PEM = (
    "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n"
    "-----END PRIVATE KEY-----\n"
)
# A secret of several words, or one its name says (helper safety71): a key and its value, the cut anywhere in either;
# each value of no shape (OPAQUE), hidden by its key alone. A Basic header's value: base64 of 'user:password' (RFC 7617
# section 2's example pair, 'Aladdin:open sesame')
BASIC = "QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
MULTI_WORD = {
    "api-key option": ("INFO serve args: --api-key ", OPAQUE, " --port 8000"),
    "hf-token option": ("launch: vllm serve M --hf-token=", OPAQUE, " --port 8000"),
    "dict repr": ("non-default args: {'api_key': '", OPAQUE, "', 'port': 8000}"),
    "json": ('INFO body {"token": "', OPAQUE, '", "n": 1}'),
    "basic": ("DEBUG send: b'GET /v1/models\\r\\nAuthorization: Basic ", BASIC, " done"),
    "named": ("env: VLLM_API_KEY=", OPAQUE, " PATH=/usr/bin"),
    "spaced value": ("INFO connecting with ", "correct horse battery staple", " now"),
}
# the known value of 'spaced value': an environment variable named as a secret holds it
SPACED_ENV = {"ONECHIP_DB_PASSWORD": MULTI_WORD["spaced value"][1]}
# the cases whose value is no quoted text and no known value: one that reaches its line's end is whole there (a wrap
# cannot be told from the next line's first word: 'HF_TOKEN=K' then 'INFO ...' showed '*** ...'), so a wrap inside it
# is not followed; a cut in its key, or between the key and it, is
UNQUOTED = ("api-key option", "hf-token option", "named")
