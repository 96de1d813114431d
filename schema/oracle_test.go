package schema

// Differential tests: github.com/santhosh-tekuri/jsonschema/v6, the library
// this package replaces, is the oracle. Random draft 2020-12 schemas and
// random instances (mostly built from the schema, so that they are near
// the boundary between valid and invalid) must get the same verdict from
// both; random, sometimes malformed, schemas must be rejected by both or
// by neither.
//
//	go test ./schema -run Oracle -rapid.checks=5000

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"pgregory.net/rapid"
)

const oracleURL = "https://stepwise.test/schema.json"

// oracleCompile compiles doc with the oracle: draft 2020-12 by default,
// format not asserted (the compiler's default), no loader beyond the one
// resource.
func oracleCompile(doc any) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(oracleURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(oracleURL)
}

// oracleValue is v as the oracle reads documents: decoded JSON with
// json.Number numbers.
func oracleValue(t interface{ Fatalf(string, ...any) }, v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %#v: %v", v, err)
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("unmarshal %s: %v", data, err)
	}
	return out
}

func jsonText(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(data)
}

// renumber returns v with its numbers in one of the representations the
// package accepts: float64 as encoding/json decodes them, json.Number as
// json.Decoder.UseNumber does, or (for whole numbers) int and int64, as
// Go code and YAML decoders produce them.
func renumber(t *rapid.T, v any, label string) any {
	mode := rapid.IntRange(0, 3).Draw(t, label+" numbers")
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case float64:
			switch {
			case mode == 1:
				return json.Number(strconv.FormatFloat(x, 'f', -1, 64))
			case mode == 2 && x == math.Trunc(x) && math.Abs(x) < 1<<53:
				return int(x)
			case mode == 3 && x == math.Trunc(x) && math.Abs(x) < 1<<53:
				return int64(x)
			}
			return x
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = walk(e)
			}
			return out
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[k] = walk(e)
			}
			return out
		}
		return v
	}
	return walk(v)
}

// Pools the generators draw from: small, with boundary cases (decimals
// that binary floating point does not hold, non-ASCII strings whose byte
// and character lengths differ).
var (
	numberPool   = []float64{-3, -1, -0.01, 0, 0.1, 0.3, 0.5, 0.7, 1, 1.5, 2, 2.5, 3, 10, 19.99, 20, 100}
	multiplePool = []float64{0.1, 0.01, 0.5, 1, 1.5, 2, 3}
	stringPool   = []string{"", "a", "ab", "abc", "b", "foo", "Foo", "x1", "x12", "a1", "é", "éé", "日本語", "😀", "a😀", "aé😀", "x_y", "bb"}
	namePool     = []string{"a", "b", "c", "foo", "x1", "é", "日"}
	patternPool  = []string{"^a", "b$", "^[a-z]+$", `\d`, "^.{2}$", "é", "^$", `^x\d+$`, "^[^a]", "(?i)^f"}
	typePool     = []string{"null", "boolean", "object", "array", "number", "integer", "string"}
)

// genCtx is where in the schema being generated a subschema goes.
type genCtx struct {
	depth int
	// defs is how many $defs the root has ("d0", "d1", …); def is the
	// index of the def being generated, or -1.
	defs, def int
	// consumed is true below a keyword that applies its schemas to a
	// part of the value (properties, items, …): a $ref may loop back
	// there, as a tree schema does, since the value gets smaller.
	// In place (allOf, $ref, …) a def mostly refers only to the defs
	// before it: a schema that applies itself to the same value forever is
	// a loop, which both libraries fail (the oracle with its RefCycle
	// error), and which the generator makes only now and then.
	consumed bool
	// bad is the chance in percent of a malformed keyword (0 for the
	// validation oracle).
	bad int
}

func (c genCtx) child(consumed bool) genCtx {
	c.depth++
	c.consumed = c.consumed || consumed
	return c
}

const maxDepth = 3

// chance is true with about the given probability. rapid draws small
// integers far more often than large ones (a third of IntRange(0, 99) is
// below 5), and its large ones about uniformly: a rare event is a large
// draw, a likely one the absence of a rare one.
func chance(t *rapid.T, percent int, label string) bool {
	x := rapid.IntRange(0, 99).Draw(t, label)
	if percent <= 50 {
		return x >= 100-percent
	}
	return x < percent
}

func distinctNames(t *rapid.T, label string, least int) []any {
	names := rapid.SliceOfNDistinct(rapid.SampledFrom(namePool), least, 3, rapid.ID[string]).Draw(t, label)
	out := make([]any, len(names))
	for i, n := range names {
		out[i] = n
	}
	return out
}

// genRoot generates a root schema: sometimes with $defs the rest refers to.
func genRoot(t *rapid.T, bad int) any {
	ctx := genCtx{def: -1, bad: bad}
	ctx.defs = rapid.IntRange(0, 3).Draw(t, "defs")
	s := genSchema(t, ctx)
	if ctx.defs == 0 {
		return s
	}
	m, ok := s.(map[string]any)
	if !ok {
		// A boolean root cannot hold $defs: wrap it.
		m = map[string]any{"allOf": []any{s}}
	}
	defs := map[string]any{}
	for i := range ctx.defs {
		dctx := ctx
		dctx.def = i
		dctx.depth = 1
		defs["d"+strconv.Itoa(i)] = genSchema(t, dctx)
	}
	m["$defs"] = defs
	return m
}

// genSchema generates a subschema.
func genSchema(t *rapid.T, ctx genCtx) any {
	if ctx.bad > 0 && chance(t, ctx.bad/3, "not a schema") {
		return rapid.SampledFrom([]any{3.0, "x", []any{}, nil, []any{map[string]any{}}}).Draw(t, "non-schema")
	}
	if chance(t, 10, "boolean schema") {
		return rapid.Bool().Draw(t, "boolean")
	}
	m := map[string]any{}
	n := rapid.IntRange(0, max(1, 4-ctx.depth)).Draw(t, "keywords")
	for range n {
		kw := rapid.SampledFrom(keywords).Draw(t, "keyword")
		if ctx.depth >= maxDepth && kw.sub {
			continue
		}
		kw.gen(t, ctx, m)
	}
	if ctx.bad > 0 && chance(t, ctx.bad, "malformed") {
		k := rapid.SampledFrom(badKeywords).Draw(t, "bad keyword")
		m[k] = rapid.SampledFrom(badValues[k]).Draw(t, "bad value")
	}
	return m
}

type keyword struct {
	sub bool // has subschemas
	gen func(t *rapid.T, ctx genCtx, m map[string]any)
}

func leafKeyword(gen func(t *rapid.T, ctx genCtx, m map[string]any)) keyword {
	return keyword{gen: gen}
}

func subKeyword(gen func(t *rapid.T, ctx genCtx, m map[string]any)) keyword {
	return keyword{sub: true, gen: gen}
}

func drawNumber(t *rapid.T, label string) float64 {
	return rapid.SampledFrom(numberPool).Draw(t, label)
}

func schemaList(t *rapid.T, ctx genCtx, least int, consumed bool) []any {
	n := rapid.IntRange(least, 3).Draw(t, "list length")
	out := make([]any, n)
	for i := range out {
		out[i] = genSchema(t, ctx.child(consumed))
	}
	return out
}

// keywords generate the keywords of a subschema (set in init: they call
// genSchema, which draws from them).
var keywords []keyword

func init() { keywords = keywordGenerators() }

func keywordGenerators() []keyword {
	return []keyword{
		leafKeyword(func(t *rapid.T, _ genCtx, m map[string]any) {
			if chance(t, 50, "type list") {
				types := rapid.SliceOfNDistinct(rapid.SampledFrom(typePool), 1, 3, rapid.ID[string]).Draw(t, "types")
				list := make([]any, len(types))
				for i, s := range types {
					list[i] = s
				}
				m["type"] = list
				return
			}
			m["type"] = rapid.SampledFrom(typePool).Draw(t, "type")
		}),
		leafKeyword(func(t *rapid.T, _ genCtx, m map[string]any) {
			n := rapid.IntRange(1, 3).Draw(t, "enum length")
			list := make([]any, n)
			for i := range list {
				list[i] = genValue(t, 1)
			}
			m["enum"] = list
		}),
		leafKeyword(func(t *rapid.T, _ genCtx, m map[string]any) { m["const"] = genValue(t, 1) }),
		leafKeyword(func(t *rapid.T, _ genCtx, m map[string]any) {
			k := rapid.SampledFrom([]string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}).Draw(t, "bound")
			m[k] = drawNumber(t, "limit")
		}),
		leafKeyword(func(t *rapid.T, _ genCtx, m map[string]any) {
			m["multipleOf"] = rapid.SampledFrom(multiplePool).Draw(t, "multipleOf")
		}),
		leafKeyword(func(t *rapid.T, _ genCtx, m map[string]any) {
			k := rapid.SampledFrom([]string{"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"}).Draw(t, "count keyword")
			m[k] = float64(rapid.IntRange(0, 3).Draw(t, "count"))
		}),
		leafKeyword(func(t *rapid.T, _ genCtx, m map[string]any) {
			m["pattern"] = rapid.SampledFrom(patternPool).Draw(t, "pattern")
		}),
		leafKeyword(func(t *rapid.T, _ genCtx, m map[string]any) { m["required"] = distinctNames(t, "required", 0) }),
		leafKeyword(func(t *rapid.T, _ genCtx, m map[string]any) {
			deps := map[string]any{}
			for _, name := range distinctNames(t, "dependentRequired", 1) {
				deps[name.(string)] = distinctNames(t, "dependencies", 0)
			}
			m["dependentRequired"] = deps
		}),
		leafKeyword(func(t *rapid.T, _ genCtx, m map[string]any) { m["uniqueItems"] = rapid.Bool().Draw(t, "uniqueItems") }),
		leafKeyword(func(t *rapid.T, ctx genCtx, m map[string]any) {
			// A $ref: to a def (in place, only to the defs before this one),
			// or to the root below a keyword that consumes the value; now
			// and then a loop, which both libraries must fail.
			loop := chance(t, 5, "loop")
			var targets []string
			for i := range ctx.defs {
				if ctx.consumed || ctx.def < 0 || i < ctx.def || loop {
					targets = append(targets, "#/$defs/d"+strconv.Itoa(i))
				}
			}
			if ctx.consumed || loop {
				targets = append(targets, "#")
			}
			if len(targets) > 0 {
				m["$ref"] = rapid.SampledFrom(targets).Draw(t, "$ref")
			}
		}),
		subKeyword(genProperties),
		subKeyword(genPatternProperties),
		subKeyword(func(t *rapid.T, ctx genCtx, m map[string]any) {
			k := rapid.SampledFrom([]string{"additionalProperties", "unevaluatedProperties", "items", "unevaluatedItems", "contains"}).Draw(t, "applicator")
			if chance(t, 40, "boolean "+k) {
				m[k] = rapid.Bool().Draw(t, k)
			} else {
				m[k] = genSchema(t, ctx.child(true))
			}
		}),
		subKeyword(func(t *rapid.T, ctx genCtx, m map[string]any) {
			// propertyNames applies to the names, strings: mostly a string schema.
			s := map[string]any{}
			for range rapid.IntRange(1, 2).Draw(t, "name keywords") {
				switch rapid.IntRange(0, 3).Draw(t, "name keyword") {
				case 0:
					s["pattern"] = rapid.SampledFrom(patternPool).Draw(t, "name pattern")
				case 1:
					s["maxLength"] = float64(rapid.IntRange(0, 3).Draw(t, "name maxLength"))
				case 2:
					s["enum"] = distinctNames(t, "name enum", 1)
				default:
					s = map[string]any{"not": genSchema(t, ctx.child(false))}
				}
			}
			m["propertyNames"] = s
		}),
		subKeyword(func(t *rapid.T, ctx genCtx, m map[string]any) {
			deps := map[string]any{}
			for _, name := range distinctNames(t, "dependentSchemas", 1) {
				deps[name.(string)] = genSchema(t, ctx.child(false))
			}
			m["dependentSchemas"] = deps
		}),
		subKeyword(genPrefixItems),
		subKeyword(func(t *rapid.T, ctx genCtx, m map[string]any) {
			m["contains"] = genSchema(t, ctx.child(true))
			if chance(t, 50, "minContains") {
				m["minContains"] = float64(rapid.IntRange(0, 2).Draw(t, "minContains"))
			}
			if chance(t, 50, "maxContains") {
				m["maxContains"] = float64(rapid.IntRange(0, 2).Draw(t, "maxContains"))
			}
		}),
		subKeyword(func(t *rapid.T, ctx genCtx, m map[string]any) {
			k := rapid.SampledFrom([]string{"allOf", "anyOf", "oneOf"}).Draw(t, "combinator")
			m[k] = schemaList(t, ctx, 1, false)
		}),
		subKeyword(func(t *rapid.T, ctx genCtx, m map[string]any) { m["not"] = genSchema(t, ctx.child(false)) }),
		subKeyword(func(t *rapid.T, ctx genCtx, m map[string]any) {
			// unevaluatedProperties or unevaluatedItems, often beside an
			// in-place keyword whose subschemas evaluate some of the value.
			k, part := "unevaluatedProperties", "properties"
			if chance(t, 50, "unevaluatedItems") {
				k, part = "unevaluatedItems", rapid.SampledFrom([]string{"prefixItems", "items", "contains"}).Draw(t, "items keyword")
			} else if chance(t, 30, "patternProperties") {
				part = "patternProperties"
			}
			if chance(t, 50, "boolean "+k) {
				m[k] = rapid.Bool().Draw(t, k)
			} else {
				m[k] = genSchema(t, ctx.child(true))
			}
			if !chance(t, 70, "beside") {
				return
			}
			branch := func() any {
				b := map[string]any{}
				switch part {
				case "properties":
					genProperties(t, ctx.child(false), b)
				case "patternProperties":
					genPatternProperties(t, ctx.child(false), b)
				case "prefixItems":
					genPrefixItems(t, ctx.child(false), b)
				default:
					b[part] = genSchema(t, ctx.child(true))
				}
				return b
			}
			switch in := rapid.SampledFrom([]string{"allOf", "anyOf", "oneOf", "if", "dependentSchemas", "not"}).Draw(t, "in place"); in {
			case "if":
				m["if"], m["then"] = branch(), branch()
				if chance(t, 50, "else") {
					m["else"] = branch()
				}
			case "dependentSchemas":
				m[in] = map[string]any{rapid.SampledFrom(namePool).Draw(t, "dependency"): branch()}
			case "not":
				m[in] = branch()
			default:
				list := []any{branch()}
				if chance(t, 50, "second branch") {
					list = append(list, branch())
				}
				m[in] = list
			}
		}),
		subKeyword(func(t *rapid.T, ctx genCtx, m map[string]any) {
			m["if"] = genSchema(t, ctx.child(false))
			if chance(t, 70, "then") {
				m["then"] = genSchema(t, ctx.child(false))
			}
			if chance(t, 70, "else") {
				m["else"] = genSchema(t, ctx.child(false))
			}
		}),
	}
}

func genProperties(t *rapid.T, ctx genCtx, m map[string]any) {
	props := map[string]any{}
	for _, name := range distinctNames(t, "properties", 1) {
		props[name.(string)] = genSchema(t, ctx.child(true))
	}
	m["properties"] = props
}

func genPatternProperties(t *rapid.T, ctx genCtx, m map[string]any) {
	props := map[string]any{}
	for _, p := range rapid.SliceOfNDistinct(rapid.SampledFrom(patternPool), 1, 2, rapid.ID[string]).Draw(t, "patternProperties") {
		props[p] = genSchema(t, ctx.child(true))
	}
	m["patternProperties"] = props
}

func genPrefixItems(t *rapid.T, ctx genCtx, m map[string]any) {
	m["prefixItems"] = schemaList(t, ctx, 1, true)
}

// badValues are malformed values for keywords, each of which the draft
// 2020-12 metaschema rejects.
var badValues = map[string][]any{
	"type":                  {"strin", []any{"string", "string"}, []any{}, 3.0, []any{"integer", 1.0}},
	"enum":                  {3.0, "a", map[string]any{}},
	"multipleOf":            {0.0, -1.0, "2"},
	"minimum":               {"0", true},
	"exclusiveMaximum":      {true, "1"},
	"exclusiveMinimum":      {false},
	"minLength":             {-1.0, 1.5, "3"},
	"maxLength":             {-2.0},
	"minItems":              {0.5},
	"maxProperties":         {-1.0},
	"minContains":           {-1.0, "1"},
	"maxContains":           {1.25},
	"pattern":               {"(", "[a-", `\`, 3.0, "a{2,1}"},
	"patternProperties":     {map[string]any{"(": true}, []any{}},
	"required":              {[]any{"a", "a"}, "a", []any{1.0}},
	"dependentRequired":     {map[string]any{"a": "b"}, map[string]any{"a": []any{"b", "b"}}, []any{"a"}},
	"dependentSchemas":      {map[string]any{"a": 3.0}, []any{}},
	"properties":            {[]any{}, map[string]any{"a": "string"}},
	"additionalProperties":  {3.0, "x"},
	"propertyNames":         {"x"},
	"items":                 {[]any{map[string]any{}}, 1.0},
	"prefixItems":           {[]any{}, map[string]any{}},
	"contains":              {[]any{}},
	"uniqueItems":           {"yes", 1.0},
	"allOf":                 {[]any{}, map[string]any{}},
	"anyOf":                 {[]any{}, []any{3.0}},
	"oneOf":                 {true},
	"not":                   {[]any{}},
	"if":                    {1.0},
	"unevaluatedProperties": {"no"},
	"unevaluatedItems":      {[]any{true}},
	"$defs":                 {3.0, map[string]any{"a": 3.0}},
	"$ref":                  {3.0, "#/$defs/missing", "#/nowhere", "other.json", "#nosuchanchor"},
	"$anchor":               {"1a", "", 3.0},
	"$id":                   {3.0, "#foo", "http://[::1", "s.json#frag"},
	"$comment":              {1.0},
	"title":                 {1.0},
	"description":           {true},
	"readOnly":              {"x"},
	"deprecated":            {1.0},
	"examples":              {3.0},
	"format":                {2.0},
}

var badKeywords = func() []string {
	var ks []string
	for k := range badValues {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}()

// genValue generates a random JSON value (float64 numbers).
func genValue(t *rapid.T, depth int) any {
	kinds := 6
	if depth <= 0 {
		kinds = 4
	}
	switch rapid.IntRange(0, kinds-1).Draw(t, "value kind") {
	case 0:
		return nil
	case 1:
		return rapid.Bool().Draw(t, "bool")
	case 2:
		return drawNumber(t, "number")
	case 3:
		return rapid.SampledFrom(stringPool).Draw(t, "string")
	case 4:
		n := rapid.IntRange(0, 3).Draw(t, "array length")
		a := make([]any, n)
		for i := range a {
			a[i] = genValue(t, depth-1)
		}
		return a
	}
	m := map[string]any{}
	for _, k := range distinctNames(t, "object keys", 0) {
		m[k.(string)] = genValue(t, depth-1)
	}
	return m
}

// genInstance generates a value for the schema s of the document root:
// mostly one built to satisfy s's keywords, often with a value at a
// boundary, sometimes any value.
func genInstance(t *rapid.T, root, s any, depth int) any {
	m, ok := s.(map[string]any)
	if !ok || depth > 4 || chance(t, 12, "random instance") {
		return genValue(t, 2)
	}
	if ref, ok := m["$ref"].(string); ok && chance(t, 50, "follow $ref") {
		if target, ok := lookupRef(root, ref); ok {
			return genInstance(t, root, target, depth+1)
		}
	}
	if c, ok := m["const"]; ok && chance(t, 70, "const") {
		return c
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 && chance(t, 70, "enum") {
		return rapid.SampledFrom(e).Draw(t, "enum value")
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if list, ok := m[k].([]any); ok && len(list) > 0 && chance(t, 40, k) {
			return genInstance(t, root, rapid.SampledFrom(list).Draw(t, k+" branch"), depth+1)
		}
	}
	if _, ok := m["if"]; ok && chance(t, 40, "if") {
		branch := rapid.SampledFrom([]string{"if", "then", "else"}).Draw(t, "if branch")
		if b, ok := m[branch]; ok {
			return genInstance(t, root, b, depth+1)
		}
	}
	kind := instanceKind(t, m)
	switch kind {
	case "null":
		return nil
	case "boolean":
		return rapid.Bool().Draw(t, "bool")
	case "string":
		return genString(t, m)
	case "number", "integer":
		return genNumber(t, m, kind == "integer")
	case "array":
		return genArray(t, root, m, depth)
	case "object":
		return genObject(t, root, m, depth)
	}
	return genValue(t, 2)
}

// instanceKind picks the type of the instance: one the schema allows, or
// one its keywords are about.
func instanceKind(t *rapid.T, m map[string]any) string {
	switch ty := m["type"].(type) {
	case string:
		if chance(t, 90, "listed type") {
			return ty
		}
	case []any:
		if len(ty) > 0 && chance(t, 90, "listed type") {
			return rapid.SampledFrom(ty).Draw(t, "type").(string)
		}
	}
	var kinds []string
	for k := range m {
		switch k {
		case "minLength", "maxLength", "pattern":
			kinds = append(kinds, "string")
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf":
			kinds = append(kinds, "number")
		case "items", "prefixItems", "contains", "uniqueItems", "minItems", "maxItems", "unevaluatedItems":
			kinds = append(kinds, "array")
		case "properties", "patternProperties", "additionalProperties", "required", "propertyNames",
			"dependentRequired", "dependentSchemas", "minProperties", "maxProperties", "unevaluatedProperties":
			kinds = append(kinds, "object")
		}
	}
	if len(kinds) == 0 {
		return rapid.SampledFrom(typePool).Draw(t, "any type")
	}
	slices.Sort(kinds)
	return rapid.SampledFrom(kinds).Draw(t, "keyword type")
}

func lookupRef(root any, ref string) (any, bool) {
	if ref == "#" {
		return root, true
	}
	name, ok := strings.CutPrefix(ref, "#/$defs/")
	if !ok {
		return nil, false
	}
	defs, _ := root.(map[string]any)["$defs"].(map[string]any)
	d, ok := defs[name]
	return d, ok
}

func genString(t *rapid.T, m map[string]any) string {
	if chance(t, 20, "any string") {
		return rapid.SampledFrom(stringPool).Draw(t, "string")
	}
	var fits []string
	var re *regexp.Regexp
	if p, ok := m["pattern"].(string); ok {
		re = regexp.MustCompile(p)
	}
	for _, s := range stringPool {
		n := float64(len([]rune(s)))
		if lo, ok := m["minLength"].(float64); ok && n < lo {
			continue
		}
		if hi, ok := m["maxLength"].(float64); ok && n > hi {
			continue
		}
		if re != nil && !re.MatchString(s) {
			continue
		}
		fits = append(fits, s)
	}
	if len(fits) == 0 {
		return rapid.SampledFrom(stringPool).Draw(t, "string")
	}
	return rapid.SampledFrom(fits).Draw(t, "fitting string")
}

func genNumber(t *rapid.T, m map[string]any, integer bool) float64 {
	candidates := slices.Clone(numberPool)
	for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
		if b, ok := m[k].(float64); ok {
			candidates = append(candidates, b, b-1, b+1, b-0.01, b+0.01)
		}
	}
	if d, ok := m["multipleOf"].(float64); ok {
		for k := -3; k <= 25; k++ {
			candidates = append(candidates, float64(k)*d)
		}
	}
	for i, c := range candidates {
		// As a person writes it: 0.30000000000000004 is 0.3.
		candidates[i], _ = strconv.ParseFloat(strconv.FormatFloat(c, 'f', 4, 64), 64)
		if integer {
			candidates[i] = math.Round(candidates[i])
		}
	}
	return rapid.SampledFrom(candidates).Draw(t, "number")
}

func genArray(t *rapid.T, root any, m map[string]any, depth int) []any {
	prefix, _ := m["prefixItems"].([]any)
	n := rapid.IntRange(0, len(prefix)+2).Draw(t, "array length")
	a := make([]any, n)
	for i := range a {
		var s any = true
		switch {
		case i < len(prefix):
			s = prefix[i]
		case m["items"] != nil:
			s = m["items"]
		}
		if c, ok := m["contains"]; ok && chance(t, 40, "contains item") {
			s = c
		}
		a[i] = genInstance(t, root, s, depth+1)
	}
	return a
}

func genObject(t *rapid.T, root any, m map[string]any, depth int) map[string]any {
	props, _ := m["properties"].(map[string]any)
	var keys []string
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if chance(t, 90, "required present") {
				keys = append(keys, r.(string))
			}
		}
	}
	for _, k := range sortedKeys(props) {
		if chance(t, 60, "property present") {
			keys = append(keys, k)
		}
	}
	if chance(t, 40, "other keys") {
		for _, k := range distinctNames(t, "other keys", 1) {
			keys = append(keys, k.(string))
		}
	}
	if deps, ok := m["dependentRequired"].(map[string]any); ok {
		for _, k := range slices.Clone(keys) {
			if d, ok := deps[k].([]any); ok && chance(t, 70, "dependencies present") {
				for _, x := range d {
					keys = append(keys, x.(string))
				}
			}
		}
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	pats, _ := m["patternProperties"].(map[string]any)
	o := map[string]any{}
	for _, k := range keys {
		var s any = m["additionalProperties"]
		if p, ok := props[k]; ok {
			s = p
		} else {
			for _, p := range sortedKeys(pats) {
				if regexp.MustCompile(p).MatchString(k) {
					s = pats[p]
					break
				}
			}
		}
		if s == nil {
			s = m["unevaluatedProperties"]
		}
		if s == nil {
			s = true
		}
		o[k] = genInstance(t, root, s, depth+1)
	}
	return o
}

// TestOracleValidate checks that this package and the oracle agree on
// whether random instances are valid against random valid schemas.
func TestOracleValidate(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		doc := genRoot(t, 0)
		theirs, err := oracleCompile(oracleValue(t, doc))
		if err != nil {
			// The generator should make only valid schemas.
			t.Fatalf("oracle rejects generated schema %s: %v", jsonText(doc), err)
		}
		ours, err := Compile(renumber(t, doc, "schema"))
		if err != nil {
			t.Fatalf("Compile(%s): %v", jsonText(doc), err)
		}
		for i := range rapid.IntRange(1, 4).Draw(t, "instances") {
			inst := genInstance(t, doc, doc, 0)
			ourErr := ours.Validate(renumber(t, inst, "instance"+strconv.Itoa(i)))
			theirErr := theirs.Validate(oracleValue(t, inst))
			if (ourErr == nil) != (theirErr == nil) {
				t.Fatalf("verdicts differ\nschema:   %s\ninstance: %s\nours:     %v\noracle:   %v",
					jsonText(doc), jsonText(inst), ourErr, theirErr)
			}
			if ourErr != nil {
				checkError(t, ourErr, inst)
			}
		}
	})
}

// checkError checks the shape of a validation error: an *Error whose
// leaves each say something about a place that exists in the instance.
func checkError(t interface {
	Fatalf(string, ...any)
}, err error, inst any) {
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("error %T %v is not an *Error", err, err)
	}
	leaves := e.Leaves()
	if len(leaves) == 0 {
		t.Fatalf("error %v has no leaves", e)
	}
	for _, l := range leaves {
		if l.Message == "" {
			t.Fatalf("leaf %+v has no message", l)
		}
		if len(l.Causes) != 0 {
			t.Fatalf("leaf %+v has causes", l)
		}
		if _, ok := valueAt(inst, l.InstanceLocation); !ok {
			t.Fatalf("leaf %q: instance location %q is not in %s", l.Message, l.InstanceLocation, jsonText(inst))
		}
	}
	if e.Error() == "" {
		t.Fatalf("empty Error()")
	}
}

// unreached reports whether the oracle leaves the schema at loc (a JSON
// pointer into doc) uncompiled where this package compiles it: it is
// under a "then" or "else" that no "if" can select.
func unreached(doc any, loc string) bool {
	v := doc
	for _, tok := range strings.Split(loc, "/")[1:] {
		tok = unescape(tok)
		m, _ := v.(map[string]any)
		if m == nil {
			if a, ok := v.([]any); ok {
				i, _ := strconv.Atoi(tok)
				v = a[i]
				continue
			}
			return false
		}
		cond, hasIf := m["if"].(bool)
		_, isSchema := m["if"].(map[string]any)
		switch {
		case tok == "then" && !isSchema && (!hasIf || !cond):
			return true
		case tok == "else" && !isSchema && (!hasIf || cond):
			return true
		}
		v = m[tok]
	}
	return false
}

// TestOracleCompile checks that this package and the oracle agree on
// which schemas are valid, on random schemas of which many hold a
// malformed keyword or a subschema that is not a schema.
//
// Exclusions, where the oracle legitimately differs:
//   - badValues has no malformed $schema or $dynamicRef: $schema names a
//     document outside this one, which this package never loads (the
//     oracle tries to, and fails for its own reasons), and this package
//     does not implement $dynamicRef's dynamic scope.
//   - Keywords this package does not check at all (unknown ones, and
//     annotations such as "default", contentMediaType) are not made
//     malformed.
//   - The oracle checks every subschema against the metaschema but
//     resolves the $refs only of the subschemas it compiles, which leaves
//     out "then" and "else" beside a boolean "if" or none. This package
//     compiles them too (it skips only $defs nothing refers to, as the
//     oracle does), so that a broken $ref there is found when the schema
//     is written: a $ref error at such a place is expected of this
//     package alone (see unreached).
func TestOracleCompile(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		doc := genRoot(t, 15)
		_, theirErr := oracleCompile(oracleValue(t, doc))
		_, ourErr := Compile(renumber(t, doc, "schema"))
		var se *SchemaError
		if ourErr != nil && theirErr == nil && errors.As(ourErr, &se) &&
			strings.HasSuffix(se.Location, "/$ref") && unreached(doc, se.Location) {
			return
		}
		if (ourErr == nil) != (theirErr == nil) {
			t.Fatalf("compile verdicts differ\nschema: %s\nours:   %v\noracle: %v", jsonText(doc), ourErr, theirErr)
		}
		if ourErr != nil {
			se, ok := ourErr.(*SchemaError)
			if !ok || se.Message == "" {
				t.Fatalf("Compile error %T %v is not a *SchemaError with a message", ourErr, ourErr)
			}
		}
	})
}
