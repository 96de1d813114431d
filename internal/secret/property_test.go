package secret

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestPropertyMaskHidesEverySecret(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		// Secrets from a small alphabet so they overlap and nest often; no '*',
		// which the mask itself could recreate (see Mask).
		secretGen := rapid.StringMatching(`[abc01ü]{3,8}`)
		secrets := rapid.SliceOfN(secretGen, 1, 6).Draw(t, "secrets")
		// Filler may contain stars and pieces of secrets.
		filler := rapid.OneOf(
			rapid.StringMatching(`[abc01ü* ]{0,6}`),
			rapid.String(),
		)
		n := rapid.IntRange(0, 12).Draw(t, "parts")
		var b strings.Builder
		for i := range n {
			b.WriteString(filler.Draw(t, "filler"))
			s := rapid.SampledFrom(secrets).Draw(t, "secret")
			if rapid.Bool().Draw(t, "partial") && i%2 == 0 {
				s = s[:rapid.IntRange(0, len(s)).Draw(t, "cut")] // a prefix, possibly completed by the next part
			}
			b.WriteString(s)
		}
		text := b.String()
		m := NewMasker()
		m.Add(secrets...)
		got := m.Mask(text)
		for _, s := range secrets {
			if strings.Contains(got, s) {
				t.Fatalf("Mask(%q) = %q still contains %q", text, got, s)
			}
		}
		// Nothing but secrets is removed: text without secrets is unchanged.
		clean := true
		for _, s := range secrets {
			clean = clean && !strings.Contains(text, s)
		}
		if clean && got != text {
			t.Fatalf("Mask changed %q (no secrets in it) to %q", text, got)
		}
	})
}

// maskModel is a naive Mask: mark every byte of every occurrence, then
// replace each run of marked bytes with Redacted.
func maskModel(text string, secrets []string) string {
	covered := make([]bool, len(text))
	for _, s := range secrets {
		if len(s) < MinMaskLen {
			continue
		}
		for i := 0; i+len(s) <= len(text); i++ {
			if text[i:i+len(s)] == s {
				for j := i; j < i+len(s); j++ {
					covered[j] = true
				}
			}
		}
	}
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		if !covered[i] {
			b.WriteByte(text[i])
			continue
		}
		if i == 0 || !covered[i-1] {
			b.WriteString(Redacted)
		}
	}
	return b.String()
}

func TestPropertyMaskMatchesModel(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		secrets := rapid.SliceOfN(rapid.StringMatching(`[ab]{1,5}`), 0, 5).Draw(t, "secrets")
		text := rapid.StringMatching(`[ab ]{0,40}`).Draw(t, "text")
		m := NewMasker()
		m.Add(secrets...)
		if got, want := m.Mask(text), maskModel(text, secrets); got != want {
			t.Fatalf("Mask(%q) with %q = %q, want %q", text, secrets, got, want)
		}
	})
}

// A text cut in pieces and masked piece by piece with MaskStream (each
// piece after the tail held back from the one before, the last tail masked
// whole) shows no secret, and a text without secrets passes unchanged.
func TestPropertyMaskStreamHidesSecretsAcrossPieces(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		secrets := rapid.SliceOfN(rapid.StringMatching(`[abc01]{3,8}`), 1, 4).Draw(t, "secrets")
		var b strings.Builder
		for range rapid.IntRange(0, 10).Draw(t, "parts") {
			b.WriteString(rapid.StringMatching(`[abc01 x]{0,6}`).Draw(t, "filler"))
			b.WriteString(rapid.SampledFrom(secrets).Draw(t, "secret"))
		}
		b.WriteString(rapid.StringMatching(`[abc01 x]{0,6}`).Draw(t, "end"))
		text := b.String()
		m := NewMasker()
		m.Add(secrets...)
		var out strings.Builder
		tail := ""
		for rest := text; rest != ""; {
			n := rapid.IntRange(1, max(1, len(rest))).Draw(t, "piece")
			masked, t2 := m.MaskStream(tail + rest[:n])
			out.WriteString(masked)
			tail, rest = t2, rest[n:]
		}
		out.WriteString(m.Mask(tail))
		got := out.String()
		for _, s := range secrets {
			if strings.Contains(got, s) {
				t.Fatalf("streamed %q as %q: still contains %q", text, got, s)
			}
		}
		clean := true
		for _, s := range secrets {
			clean = clean && !strings.Contains(text, s)
		}
		if clean && got != text {
			t.Fatalf("streamed %q (no secrets in it) as %q", text, got)
		}
	})
}
