// Package secret keeps secret values out of storage and output.
//
// At rest a secret is either an environment reference ("$NAME", resolved
// only when a step needs the value) or sealed with the server key: a Sealer
// encrypts it with AES-256-GCM into the text "sealed:v1:" + base64url(nonce ||
// ciphertext). The AES key is derived from the server key as
// HMAC-SHA256(serverKey, "stepwise seal v1"), so the same server key can also
// sign tokens without the uses interfering.
//
// In output, a Masker knows the secret values in play and replaces each
// occurrence with "***" in strings, JSON-like values, errors and, through
// NewHandler, slog records. Values shorter than MinMaskLen bytes are not
// masked at all: masking a one- or two-byte secret would shred every text
// it appears in while hiding almost nothing, so such secrets must be
// rejected or accepted knowingly by the caller.
package secret
