// Package token signs and verifies the continuation tokens that stepwise
// hands out when a run pauses (a question for a person, a request for the
// agent). A token names the paused run, the step, the run's sequence number
// at the time of the pause and an expiry; continue(token, value) presents it
// back, and Verify proves it was issued by this server and has not expired.
//
// A token is the ASCII text
//
//	sw1.<payload>.<mac>
//
// where <payload> is the base64url encoding (RFC 4648 §5, no padding) of the
// binary claims and <mac> is the base64url encoding (no padding) of
// HMAC-SHA256 over the ASCII bytes "sw1." + <payload>, that is over the token
// text before the second dot. The HMAC key is derived from the server key as
// HMAC-SHA256(serverKey, "stepwise token v1"), so the same server key can be
// used for other purposes (sealing secrets) without the uses interfering.
//
// The binary claims are, in order and with nothing after them:
//
//	uvarint len(RunID)   RunID bytes
//	uvarint len(StepKey) StepKey bytes
//	varint  Seq
//	varint  Expires as Unix seconds
//
// (encoding/binary varints). Only the canonical encoding is accepted, so each
// set of claims has exactly one token per key. Expiry has second precision:
// Sign drops sub-second digits and Verify returns Expires in UTC. A token is
// valid strictly before Expires; a zero Expires is therefore always expired.
//
// Tokens are not encrypted: anyone holding one can read its claims. They are
// also not single-use by themselves; consuming a token exactly once is the
// engine's job (the sequence number makes a token stale once the run moves).
package token
