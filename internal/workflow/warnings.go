package workflow

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// RuleSecretName is the rule of a warning: an input or question named
// like a credential that is not marked secret.
const RuleSecretName = "secret-name"

// credentialWords are the words of a name that say it holds a credential
// (compared in lower case, after splitting the name at _, -, . and case
// changes); credentialPairs are two words that do together.
var (
	credentialWords = map[string]bool{"password": true, "passwd": true, "passphrase": true,
		"token": true, "secret": true, "credential": true, "credentials": true, "apikey": true,
		"privatekey": true}
	credentialPairs = map[[2]string]bool{{"api", "key"}: true, {"private", "key"}: true, {"access", "key"}: true,
		{"secret", "key"}: true, {"client", "secret"}: true, {"signing", "key"}: true}
)

// CredentialName reports whether a name reads like one of a credential
// (password, token, api_key, secret, credential, private_key, …).
func CredentialName(name string) bool {
	words := nameWords(name)
	for i, w := range words {
		if credentialWords[w] {
			return true
		}
		if i > 0 && credentialPairs[[2]string{words[i-1], w}] {
			return true
		}
	}
	return false
}

// nameWords splits a name into lower-case words at _, -, ., spaces and
// lower-to-upper case changes (apiKey, APIKey).
func nameWords(name string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(name)
	for i, r := range rs {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
			continue
		case unicode.IsUpper(r) && len(cur) > 0:
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return words
}

// secretWarnings are the warnings of a decoded workflow: inputs and
// questions (and form fields) of text named like credentials that are not
// marked secret. They do not make the workflow invalid.
func secretWarnings(src *Source, wf *Workflow) []Violation {
	var out []Violation
	warn := func(p, what, name string) {
		out = append(out, Violation{Path: p, Pos: src.KeyPos(p), Rule: RuleSecretName,
			Message: fmt.Sprintf("%s %q is named like a credential but is not marked secret: its value is stored and shown in clear", what, name),
			Hint:    "add secret: true (or rename it if it holds no credential)"})
	}
	for _, name := range wf.InputNames() {
		in := wf.Inputs[name]
		if in == nil || in.Secret || (in.Type != "" && in.Type != "string") || !CredentialName(name) {
			continue
		}
		warn("/inputs/"+escapePointer(name), "input", name)
	}
	for _, s := range Flatten(wf.Steps) {
		a := s.Ask
		if a == nil || a.Secret {
			continue
		}
		if len(a.Fields) == 0 {
			if a.QuestionType() == "string" && CredentialName(s.ID) {
				warn(s.Path, "question", s.ID)
			}
			continue
		}
		for i, f := range a.Fields {
			if f != nil && !f.Secret && f.QuestionType() == "string" && CredentialName(f.Name) {
				warn(s.Path+"/ask/fields/"+strconv.Itoa(i), "form field", f.Name)
			}
		}
	}
	sortViolations(out)
	return out
}
