package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// decode reads JSON as encoding/json does (float64 numbers).
func decode(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return v
}

// decodeNumbers reads JSON with json.Number numbers.
func decodeNumbers(t testing.TB, s string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return v
}

func compile(t testing.TB, schema string) *Schema {
	t.Helper()
	s, err := Compile(decode(t, schema))
	if err != nil {
		t.Fatalf("Compile(%s): %v", schema, err)
	}
	return s
}

// validationError validates and returns the *Error, failing the test
// when the value is valid or the error is of another type.
func validationError(t *testing.T, s *Schema, v any) *Error {
	t.Helper()
	err := s.Validate(v)
	if err == nil {
		t.Fatalf("%s: valid, want invalid", jsonText(v))
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v, want *Error", err, err)
	}
	checkError(t, e, v)
	return e
}

// TestKeywordErrors checks, keyword by keyword, the leaf a failure makes:
// its keyword, where it is in the schema and in the value, its message and
// its details.
func TestKeywordErrors(t *testing.T) {
	tests := []struct {
		name, schema, value string
		keyword, schemaLoc  string
		instanceLoc         []string
		message             string // the whole message
		check               func(t *testing.T, e *Error)
	}{
		{name: "type", schema: `{"type":"string"}`, value: `3`, keyword: "type",
			message: "must be a string, not number",
			check: func(t *testing.T, e *Error) {
				if !slices.Equal(e.Want, []string{"string"}) || e.Got != "number" {
					t.Errorf("Want %q Got %q", e.Want, e.Got)
				}
			}},
		{name: "type list", schema: `{"type":["array","null","integer"]}`, value: `true`, keyword: "type",
			message: "must be an array or null or an integer, not boolean",
			check: func(t *testing.T, e *Error) {
				if !slices.Equal(e.Want, []string{"array", "null", "integer"}) || e.Got != "boolean" {
					t.Errorf("Want %q Got %q", e.Want, e.Got)
				}
			}},
		{name: "integer", schema: `{"type":"integer"}`, value: `1.5`, keyword: "type",
			message: "must be an integer, not number"},
		{name: "enum", schema: `{"enum":["a",1,null]}`, value: `"b"`, keyword: "enum",
			message: `must be one of "a", 1, null, not "b"`,
			check: func(t *testing.T, e *Error) {
				if e.Value != "b" || len(e.Allowed) != 3 {
					t.Errorf("Value %v Allowed %v", e.Value, e.Allowed)
				}
			}},
		{name: "const", schema: `{"const":{"a":[1,2]}}`, value: `{"a":[1,3]}`, keyword: "const",
			message: `must be {"a":[1,2]}`,
			check: func(t *testing.T, e *Error) {
				if len(e.Allowed) != 1 {
					t.Errorf("Allowed %v", e.Allowed)
				}
			}},
		{name: "minimum", schema: `{"minimum":3}`, value: `2`, keyword: "minimum",
			message: "must be at least 3, not 2",
			check: func(t *testing.T, e *Error) {
				if e.Limit != "3" || e.Value != 2.0 {
					t.Errorf("Limit %q Value %v", e.Limit, e.Value)
				}
			}},
		{name: "maximum", schema: `{"maximum":2.5}`, value: `2.75`, keyword: "maximum",
			message: "must be at most 2.5, not 2.75"},
		{name: "exclusiveMinimum", schema: `{"exclusiveMinimum":0}`, value: `0`, keyword: "exclusiveMinimum",
			message: "must be greater than 0, not 0"},
		{name: "exclusiveMaximum", schema: `{"exclusiveMaximum":10}`, value: `10`, keyword: "exclusiveMaximum",
			message: "must be less than 10, not 10"},
		{name: "multipleOf", schema: `{"multipleOf":0.01}`, value: `19.999`, keyword: "multipleOf",
			message: "must be a multiple of 0.01, not 19.999",
			check: func(t *testing.T, e *Error) {
				if e.Limit != "0.01" {
					t.Errorf("Limit %q", e.Limit)
				}
			}},
		{name: "minLength", schema: `{"minLength":2}`, value: `"é"`, keyword: "minLength",
			message: "must be at least 2 characters long, not 1",
			check: func(t *testing.T, e *Error) {
				if e.Limit != "2" || e.Value != "é" {
					t.Errorf("Limit %q Value %v", e.Limit, e.Value)
				}
			}},
		{name: "minLength empty", schema: `{"minLength":1}`, value: `""`, keyword: "minLength",
			message: "must not be empty"},
		{name: "maxLength", schema: `{"maxLength":2}`, value: `"日本語"`, keyword: "maxLength",
			message: "must be at most 2 characters long, not 3"},
		{name: "pattern", schema: `{"pattern":"^[a-z]+$"}`, value: `"A1"`, keyword: "pattern",
			message: `"A1" does not match the pattern ^[a-z]+$`,
			check: func(t *testing.T, e *Error) {
				if e.Limit != "^[a-z]+$" || e.Value != "A1" {
					t.Errorf("Limit %q Value %v", e.Limit, e.Value)
				}
			}},
		{name: "minItems", schema: `{"minItems":2}`, value: `[1]`, keyword: "minItems",
			message: "must have at least 2 items, not 1"},
		{name: "maxItems", schema: `{"maxItems":1}`, value: `[1,2]`, keyword: "maxItems",
			message: "must have at most 1 item, not 2"},
		{name: "uniqueItems", schema: `{"uniqueItems":true}`, value: `[{"a":1},2,{"a":1.0}]`, keyword: "uniqueItems",
			message: "items 0 and 2 are equal: items must be unique"},
		{name: "contains", schema: `{"contains":{"type":"string"}}`, value: `[1,2]`, keyword: "contains",
			message: "no item matches the schema at /contains"},
		{name: "minContains", schema: `{"contains":{"type":"string"},"minContains":2}`, value: `["a",2]`, keyword: "minContains",
			message: "at least 2 items must match the schema at /contains, not 1"},
		{name: "maxContains", schema: `{"contains":{"type":"string"},"maxContains":1}`, value: `["a","b"]`, keyword: "maxContains",
			message: "at most 1 items may match the schema at /contains, not 2"},
		{name: "minProperties", schema: `{"minProperties":1}`, value: `{}`, keyword: "minProperties",
			message: "must have at least 1 property, not 0"},
		{name: "maxProperties", schema: `{"maxProperties":1}`, value: `{"a":1,"b":2}`, keyword: "maxProperties",
			message: "must have at most 1 property, not 2"},
		{name: "required", schema: `{"required":["a","b","c"]}`, value: `{"b":1}`, keyword: "required",
			message: `missing required properties "a", "c"`,
			check: func(t *testing.T, e *Error) {
				if !slices.Equal(e.Names, []string{"a", "c"}) {
					t.Errorf("Names %q", e.Names)
				}
			}},
		{name: "required nested", schema: `{"properties":{"a":{"required":["x"]}}}`, value: `{"a":{}}`, keyword: "required",
			schemaLoc: "/properties/a", instanceLoc: []string{"a"}, message: `missing required property "x"`},
		{name: "dependentRequired", schema: `{"dependentRequired":{"a":["b","c"]}}`, value: `{"a":1,"c":2}`, keyword: "dependentRequired",
			message: `"a" requires "b"`,
			check: func(t *testing.T, e *Error) {
				if !slices.Equal(e.Names, []string{"b"}) {
					t.Errorf("Names %q", e.Names)
				}
			}},
		{name: "dependentSchemas", schema: `{"dependentSchemas":{"a":{"required":["b"]}}}`, value: `{"a":1}`, keyword: "required",
			schemaLoc: "/dependentSchemas/a", message: `missing required property "b"`},
		{name: "additionalProperties false", schema: `{"properties":{"a":true},"patternProperties":{"^x":true},"additionalProperties":false}`,
			value: `{"a":1,"x1":2,"b":3,"c":4}`, keyword: "additionalProperties", message: `unknown properties "b", "c"`,
			check: func(t *testing.T, e *Error) {
				if !slices.Equal(e.Names, []string{"b", "c"}) {
					t.Errorf("Names %q", e.Names)
				}
			}},
		{name: "additionalProperties schema", schema: `{"additionalProperties":{"type":"string"}}`, value: `{"b":3}`, keyword: "type",
			schemaLoc: "/additionalProperties", instanceLoc: []string{"b"}, message: "must be a string, not number"},
		{name: "propertyNames", schema: `{"propertyNames":{"maxLength":2}}`, value: `{"ab":1,"abc":2}`, keyword: "propertyNames",
			message: `property name "abc" is not allowed: must be at most 2 characters long, not 3`,
			check: func(t *testing.T, e *Error) {
				if e.Value != "abc" {
					t.Errorf("Value %v", e.Value)
				}
			}},
		{name: "properties nested", schema: `{"properties":{"a":{"properties":{"b/c":{"type":"null"}}}}}`, value: `{"a":{"b/c":0}}`, keyword: "type",
			schemaLoc: "/properties/a/properties/b~1c", instanceLoc: []string{"a", "b/c"}, message: "must be null, not number"},
		{name: "patternProperties", schema: `{"patternProperties":{"^x":{"type":"string"}}}`, value: `{"xy":true}`, keyword: "type",
			schemaLoc: "/patternProperties/^x", instanceLoc: []string{"xy"}, message: "must be a string, not boolean"},
		{name: "items", schema: `{"items":{"type":"integer"}}`, value: `[1,1.5]`, keyword: "type",
			schemaLoc: "/items", instanceLoc: []string{"1"}, message: "must be an integer, not number"},
		{name: "prefixItems", schema: `{"prefixItems":[{"type":"string"},{"type":"boolean"}],"items":false}`, value: `["a",1]`, keyword: "type",
			schemaLoc: "/prefixItems/1", instanceLoc: []string{"1"}, message: "must be a boolean, not number"},
		{name: "items false after prefixItems", schema: `{"prefixItems":[true],"items":false}`, value: `[1,2]`, keyword: "false",
			schemaLoc: "/items", instanceLoc: []string{"1"}, message: "no value is allowed here"},
		{name: "false schema", schema: `false`, value: `null`, keyword: "false", message: "no value is allowed here"},
		{name: "oneOf several", schema: `{"oneOf":[{"type":"number"},{"minimum":0},{"type":"string"}]}`, value: `1`, keyword: "oneOf",
			message: "must match exactly one of the allowed forms, but matches 2 of them (0, 1)",
			check: func(t *testing.T, e *Error) {
				if e.Matches != 2 {
					t.Errorf("Matches %d", e.Matches)
				}
			}},
		{name: "not", schema: `{"not":{"type":"string"}}`, value: `"a"`, keyword: "not",
			message: "must not match the schema at /not"},
		{name: "then", schema: `{"if":{"properties":{"a":{"const":1}}},"then":{"required":["b"]},"else":{"required":["c"]}}`,
			value: `{"a":1}`, keyword: "required", schemaLoc: "/then", message: `missing required property "b"`},
		{name: "else", schema: `{"if":{"properties":{"a":{"const":1}}},"then":{"required":["b"]},"else":{"required":["c"]}}`,
			value: `{"a":2}`, keyword: "required", schemaLoc: "/else", message: `missing required property "c"`},
		{name: "unevaluatedProperties", schema: `{"allOf":[{"properties":{"a":true}}],"anyOf":[{"properties":{"b":true}},{"properties":{"c":true}}],"unevaluatedProperties":false}`,
			value: `{"a":1,"b":2,"c":3,"d":4,"e":5}`, keyword: "unevaluatedProperties", message: `unknown properties "d", "e"`,
			check: func(t *testing.T, e *Error) {
				if !slices.Equal(e.Names, []string{"d", "e"}) {
					t.Errorf("Names %q", e.Names)
				}
			}},
		{name: "unevaluatedProperties schema", schema: `{"properties":{"a":true},"unevaluatedProperties":{"type":"string"}}`,
			value: `{"a":1,"b":2}`, keyword: "type", schemaLoc: "/unevaluatedProperties", instanceLoc: []string{"b"}, message: "must be a string, not number"},
		{name: "unevaluatedItems", schema: `{"prefixItems":[true],"contains":{"type":"string"},"unevaluatedItems":false}`,
			value: `[1,"a",2]`, keyword: "false", schemaLoc: "/unevaluatedItems", instanceLoc: []string{"2"}, message: "no value is allowed here"},
		{name: "$ref", schema: `{"$defs":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/s"}}}`, value: `{"a":1}`, keyword: "type",
			schemaLoc: "/$defs/s", instanceLoc: []string{"a"}, message: "must be a string, not number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := compile(t, tt.schema)
			v := decode(t, tt.value)
			e := validationError(t, s, v)
			leaves := e.Leaves()
			if len(leaves) != 1 {
				t.Fatalf("%d leaves, want 1: %v", len(leaves), e)
			}
			l := leaves[0]
			if l.Keyword != tt.keyword || l.SchemaLocation != tt.schemaLoc || !slices.Equal(l.InstanceLocation, tt.instanceLoc) {
				t.Errorf("leaf %s at %q, value at %q; want %s at %q, value at %q",
					l.Keyword, l.SchemaLocation, l.InstanceLocation, tt.keyword, tt.schemaLoc, tt.instanceLoc)
			}
			if l.Message != tt.message {
				t.Errorf("message %q, want %q", l.Message, tt.message)
			}
			if tt.check != nil {
				tt.check(t, l)
			}
		})
	}
}

// TestCombinatorCauses checks anyOf and oneOf failures: a node naming the
// keyword, whose causes are the branches' failures.
func TestCombinatorCauses(t *testing.T) {
	for _, k := range []string{"anyOf", "oneOf"} {
		t.Run(k, func(t *testing.T) {
			s := compile(t, `{"`+k+`":[{"type":"string"},{"properties":{"a":{"minimum":5}}}]}`)
			v := decode(t, `{"a":1}`)
			e := validationError(t, s, v)
			if e.Keyword != k || len(e.Causes) != 2 {
				t.Fatalf("error %+v, want %s with 2 causes", e, k)
			}
			if k == "oneOf" && e.Matches != 0 {
				t.Errorf("Matches %d", e.Matches)
			}
			leaves := e.Leaves()
			if len(leaves) != 2 || leaves[0].Keyword != "type" || leaves[1].Keyword != "minimum" ||
				leaves[1].SchemaLocation != "/"+k+"/1/properties/a" || !slices.Equal(leaves[1].InstanceLocation, []string{"a"}) {
				t.Errorf("leaves %+v %+v", leaves[0], leaves[1])
			}
			if got := e.Error(); got != "the value: must be a string, not object; /a: must be at least 5, not 1" {
				t.Errorf("Error() = %q", got)
			}
		})
	}
}

// TestSeveralKeywords checks that a schema failing through several
// keywords reports each as a cause, in order.
func TestSeveralKeywords(t *testing.T) {
	s := compile(t, `{"type":"object","required":["a"],"properties":{"b":{"type":"string"}},"additionalProperties":false}`)
	e := validationError(t, s, decode(t, `{"b":1,"c":2}`))
	if e.Keyword != "" || len(e.Causes) != 3 {
		t.Fatalf("error %+v, want 3 causes", e)
	}
	var kws []string
	for _, l := range e.Leaves() {
		kws = append(kws, l.Keyword)
	}
	if !slices.Equal(kws, []string{"required", "type", "additionalProperties"}) {
		t.Errorf("leaves %q", kws)
	}
}

// TestVerdicts checks valid and invalid values: references, drafts and
// the number representations.
func TestVerdicts(t *testing.T) {
	const tree = `{
		"$defs": {"node": {
			"type": "object",
			"required": ["value"],
			"properties": {
				"value": {"type": "number"},
				"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}
			},
			"additionalProperties": false
		}},
		"$ref": "#/$defs/node"
	}`
	const d7 = `"$schema":"http://json-schema.org/draft-07/schema#",`
	const d4 = `"$schema":"http://json-schema.org/draft-04/schema#",`
	tests := []struct {
		name, schema string
		valid        []string
		invalid      []string
	}{
		{name: "tree", schema: tree,
			valid:   []string{`{"value":1}`, `{"value":1,"children":[{"value":2},{"value":3,"children":[{"value":4,"children":[]}]}]}`},
			invalid: []string{`{}`, `{"value":1,"children":[{"value":2},{"value":3,"children":[{"value":"4"}]}]}`, `{"value":1,"children":[{"value":2,"x":1}]}`}},
		{name: "root recursion", schema: `{"type":["object","integer"],"additionalProperties":{"$ref":"#"}}`,
			valid:   []string{`1`, `{"a":{"b":{"c":2}}}`},
			invalid: []string{`"x"`, `{"a":{"b":{"c":2.5}}}`}},
		{name: "$anchor", schema: `{"$defs":{"x":{"$anchor":"positive","exclusiveMinimum":0}},"items":{"$ref":"#positive"}}`,
			valid: []string{`[1,2]`}, invalid: []string{`[1,0]`}},
		{name: "embedded $id", schema: `{
				"$id": "https://example.com/root.json",
				"$defs": {
					"item": {"$id": "item.json", "type": "string", "$defs": {"n": {"type": "integer"}}},
					"other": {"$id": "https://example.com/dir/other.json", "$anchor": "o", "minimum": 10}
				},
				"properties": {
					"a": {"$ref": "item.json"},
					"b": {"$ref": "https://example.com/item.json#/$defs/n"},
					"c": {"$ref": "dir/other.json"},
					"d": {"$ref": "dir/other.json#o"},
					"e": {"$ref": "root.json#/$defs/item"}
				}
			}`,
			valid:   []string{`{"a":"x","b":1,"c":10,"d":11,"e":"y"}`},
			invalid: []string{`{"a":1}`, `{"b":1.5}`, `{"c":9}`, `{"d":9}`, `{"e":1}`}},
		{name: "$id resolves relative refs", schema: `{"$defs":{"a":{"$id":"sub/a.json","$ref":"b.json"},"b":{"$id":"sub/b.json","type":"null"}},"$ref":"sub/a.json"}`,
			valid: []string{`null`}, invalid: []string{`0`}},
		{name: "$ref siblings apply in 2020-12", schema: `{"$defs":{"i":{"type":"integer"}},"$ref":"#/$defs/i","minimum":5}`,
			valid: []string{`5`}, invalid: []string{`4`, `5.5`}},
		{name: "ref loop", schema: `{"$ref":"#"}`, invalid: []string{`1`, `{}`}},
		{name: "ref loop through allOf", schema: `{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/b"}]},"b":{"anyOf":[{"type":"string"},{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`,
			valid: []string{`"s"`}, invalid: []string{`1`}},
		{name: "propertyNames applying the root is no loop", schema: `{"propertyNames":{"$ref":"#"},"maxLength":2}`,
			valid: []string{`{"ab":1}`, `"ab"`}, invalid: []string{`{"abc":1}`}},
		{name: "draft-07 items list and additionalItems",
			schema:  `{` + d7 + `"items":[{"type":"string"},{"type":"integer"}],"additionalItems":{"type":"boolean"}}`,
			valid:   []string{`[]`, `["a"]`, `["a",1,true,false]`},
			invalid: []string{`[1]`, `["a","b"]`, `["a",1,2]`}},
		{name: "draft-07 items list, additionalItems false",
			schema: `{` + d7 + `"items":[true],"additionalItems":false}`,
			valid:  []string{`[1]`}, invalid: []string{`[1,2]`}},
		{name: "draft-07 definitions and $ref siblings ignored",
			schema:  `{` + d7 + `"definitions":{"i":{"type":"integer"}},"properties":{"a":{"$ref":"#/definitions/i","type":"string","minimum":100}}}`,
			valid:   []string{`{"a":1}`},
			invalid: []string{`{"a":"x"}`}},
		{name: "draft-07 dependencies",
			schema:  `{` + d7 + `"dependencies":{"a":["b"],"c":{"required":["d"]}}}`,
			valid:   []string{`{}`, `{"b":1}`, `{"a":1,"b":2}`, `{"c":1,"d":2}`},
			invalid: []string{`{"a":1}`, `{"c":1}`}},
		{name: "draft-07 $id plain name",
			schema: `{` + d7 + `"definitions":{"s":{"$id":"#str","type":"string"}},"items":{"$ref":"#str"}}`,
			valid:  []string{`["a"]`}, invalid: []string{`[1]`}},
		{name: "draft-07 ignores 2019 keywords",
			schema: `{` + d7 + `"dependentRequired":{"a":["b"]},"unevaluatedProperties":false,"prefixItems":[false]}`,
			valid:  []string{`{"a":1}`, `[1]`}},
		{name: "draft-07 if/then/else",
			schema: `{` + d7 + `"if":{"type":"string"},"then":{"minLength":2},"else":{"type":"number"}}`,
			valid:  []string{`"ab"`, `1`}, invalid: []string{`"a"`, `null`}},
		{name: "draft-04 exclusiveMaximum true",
			schema: `{` + d4 + `"maximum":10,"exclusiveMaximum":true,"minimum":1,"exclusiveMinimum":true}`,
			valid:  []string{`9.5`, `1.5`}, invalid: []string{`10`, `1`, `11`}},
		{name: "draft-04 exclusiveMaximum false",
			schema: `{` + d4 + `"maximum":10,"exclusiveMaximum":false}`,
			valid:  []string{`10`}, invalid: []string{`10.5`}},
		{name: "draft-04 id",
			schema: `{` + d4 + `"definitions":{"s":{"id":"s.json","type":"string"}},"items":{"$ref":"s.json"}}`,
			valid:  []string{`["a"]`}, invalid: []string{`[1]`}},
		{name: "draft 2019-09",
			schema: `{"$schema":"https://json-schema.org/draft/2019-09/schema","items":[{"type":"string"}],"additionalItems":false,"dependentRequired":{"a":["b"]}}`,
			valid:  []string{`["a"]`, `{"a":1,"b":2}`}, invalid: []string{`["a",1]`, `{"a":1}`}},
		{name: "integer", schema: `{"type":"integer"}`,
			valid: []string{`1`, `1.0`, `-0`, `1e3`}, invalid: []string{`1.5`, `"1"`}},
		{name: "multipleOf decimal", schema: `{"multipleOf":0.01}`,
			valid: []string{`19.99`, `0.07`, `1999`, `-0.3`, `"x"`}, invalid: []string{`19.999`, `0.001`}},
		{name: "multipleOf 0.1", schema: `{"multipleOf":0.1}`,
			valid: []string{`0.3`, `0.7`, `1.1`, `2.3`}, invalid: []string{`0.35`}},
		{name: "unicode lengths", schema: `{"minLength":2,"maxLength":3}`,
			valid:   []string{`"日本"`, `"😀😀😀"`, `"e\u0301"`, `"aé"`},
			invalid: []string{`"😀"`, `"é"`, `"日本語!"`, `"😀😀😀😀"`}},
		{name: "format is an annotation", schema: `{"format":"email"}`, valid: []string{`"not an email"`}},
		{name: "empty schema", schema: `{}`, valid: []string{`null`, `[1]`, `{"a":{}}`}},
		{name: "true schema", schema: `true`, valid: []string{`0`}},
		{name: "then without if", schema: `{"then":false,"else":false}`, valid: []string{`0`}},
		{name: "uniqueItems numbers by value", schema: `{"uniqueItems":true}`,
			valid: []string{`[1,"1",[1],{"a":1}]`}, invalid: []string{`[1,1.0]`, `[[1,{"a":2}],[1.0,{"a":2.0}]]`}},
		{name: "const numbers by value", schema: `{"const":[1,{"a":0.5}]}`,
			valid: []string{`[1.0,{"a":0.50}]`}, invalid: []string{`[1,{"a":0.5,"b":1}]`, `[true,{"a":0.5}]`}},
		{name: "contains with minContains 0", schema: `{"contains":false,"minContains":0}`, valid: []string{`[]`, `[1]`}},
		{name: "unevaluatedItems sees nested", schema: `{"anyOf":[{"prefixItems":[true,true]},{"items":{"type":"string"}}],"unevaluatedItems":false}`,
			valid: []string{`[1,2]`, `["a","b","c"]`}, invalid: []string{`[1,2,3]`}},
		{name: "unevaluatedProperties through $ref and if", schema: `{"$defs":{"a":{"properties":{"a":true}}},"$ref":"#/$defs/a","if":{"properties":{"b":{"const":1}}},"then":{"properties":{"c":true}},"unevaluatedProperties":false}`,
			valid: []string{`{"a":1,"b":1,"c":1}`}, invalid: []string{`{"a":1,"b":2,"c":1}`, `{"d":1}`}},
		{name: "unevaluatedProperties ignores failed branches", schema: `{"anyOf":[{"properties":{"a":{"type":"string"}},"required":["a"]},{"required":["b"]}],"unevaluatedProperties":false}`,
			valid: []string{`{"a":"x"}`}, invalid: []string{`{"a":1,"b":1}`}},
		{name: "nested unevaluatedProperties", schema: `{"properties":{"a":true},"allOf":[{"unevaluatedProperties":true}],"unevaluatedProperties":false}`,
			valid: []string{`{"a":1,"b":2}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := compile(t, tt.schema)
			for _, v := range tt.valid {
				for _, value := range []any{decode(t, v), decodeNumbers(t, v)} {
					if err := s.Validate(value); err != nil {
						t.Errorf("%s: %v", v, err)
					}
				}
			}
			for _, v := range tt.invalid {
				for _, value := range []any{decode(t, v), decodeNumbers(t, v)} {
					validationError(t, s, value)
				}
			}
		})
	}
}

// TestRefLoop checks the failure of a schema that applies itself to the
// same value again: a failure, not a stack overflow.
func TestRefLoop(t *testing.T) {
	s := compile(t, `{"properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"anyOf":[{"type":"string"},{"$ref":"#/$defs/y"}]},"y":{"allOf":[{"$ref":"#/$defs/x"}]}}}`)
	e := validationError(t, s, decode(t, `{"a":1}`))
	leaves := e.Leaves()
	if len(leaves) != 2 {
		t.Fatalf("leaves %v", e)
	}
	l := leaves[1]
	if l.Keyword != "$ref" || l.SchemaLocation != "/$defs/x" || !slices.Equal(l.InstanceLocation, []string{"a"}) || !strings.Contains(l.Message, "loop") {
		t.Errorf("leaf %+v", l)
	}
	if err := s.Validate(decode(t, `{"b":1}`)); err != nil {
		t.Errorf("a loop not reached: %v", err)
	}
}

// TestNumberRepresentations checks that a number means the same whether
// it is a float64, json.Number or any Go integer, in values and schemas.
func TestNumberRepresentations(t *testing.T) {
	ints := []any{20, int8(20), int16(20), int32(20), int64(20), uint(20), uint8(20), uint16(20), uint32(20), uint64(20), 20.0, float32(20), json.Number("20"), json.Number("20.0"), json.Number("2e1")}
	for _, sch := range []any{
		map[string]any{"type": "integer", "multipleOf": 5, "minimum": int64(20), "maximum": json.Number("20"), "const": 20.0, "enum": []any{uint8(20)}},
		map[string]any{"type": "integer", "multipleOf": json.Number("0.01"), "exclusiveMinimum": 19.99, "exclusiveMaximum": int32(21)},
	} {
		s, err := Compile(sch)
		if err != nil {
			t.Fatalf("Compile(%v): %v", sch, err)
		}
		for _, v := range ints {
			if err := s.Validate(v); err != nil {
				t.Errorf("%v: %T(%v): %v", sch, v, v, err)
			}
			if err := s.Validate([]any{v}); err == nil {
				t.Errorf("%v: [%T(%v)] valid", sch, v, v)
			}
		}
	}
	s := compile(t, `{"multipleOf":0.01,"maximum":19.99}`)
	for _, v := range []any{19.99, json.Number("19.99"), float32(19.99), 19, int64(-5), json.Number("1e-2")} {
		if err := s.Validate(v); err != nil {
			t.Errorf("%T(%v): %v", v, v, err)
		}
	}
	for _, v := range []any{19.999, json.Number("19.991"), 20, uint64(1 << 63), json.Number("1e400"), json.Number("19.990000000000000001")} {
		if err := s.Validate(v); err == nil {
			t.Errorf("%T(%v) valid", v, v)
		}
	}
	// Beyond float64's exact integers, comparisons are exact.
	big, err := Compile(map[string]any{"maximum": json.Number("9007199254740993")})
	if err != nil {
		t.Fatal(err)
	}
	for v, valid := range map[any]bool{int64(9007199254740992): true, int64(9007199254740993): true, int64(9007199254740994): false,
		json.Number("9007199254740994"): false, uint64(1<<63 + 1): false, json.Number("-1e30"): true} {
		if err := big.Validate(v); (err == nil) != valid {
			t.Errorf("%T(%v): %v", v, v, err)
		}
	}
	// Integers are of type integer, whatever their Go type; other types
	// are not JSON.
	if err := compile(t, `{"type":"integer"}`).Validate(struct{}{}); err == nil {
		t.Errorf("a struct is an integer")
	}
}

// TestSchemaErrors checks that invalid schemas are refused, and where the
// error points.
func TestSchemaErrors(t *testing.T) {
	const d4 = `"$schema":"http://json-schema.org/draft-04/schema#",`
	const d7 = `"$schema":"http://json-schema.org/draft-07/schema#",`
	tests := []struct {
		schema, location string
	}{
		{`3`, ""},
		{`"string"`, ""},
		{`{"type":"strin"}`, "/type"},
		{`{"type":["string","string"]}`, "/type"},
		{`{"type":[]}`, "/type"},
		{`{"type":3}`, "/type"},
		{`{"enum":"a"}`, "/enum"},
		{`{"minLength":-1}`, "/minLength"},
		{`{"maxItems":1.5}`, "/maxItems"},
		{`{"minContains":"1"}`, "/minContains"},
		{`{"multipleOf":0}`, "/multipleOf"},
		{`{"minimum":"1"}`, "/minimum"},
		{`{"exclusiveMaximum":true}`, "/exclusiveMaximum"},
		{`{"pattern":"("}`, "/pattern"},
		{`{"patternProperties":{"[a-":true}}`, "/patternProperties/[a-"},
		{`{"required":["a","a"]}`, "/required"},
		{`{"required":"a"}`, "/required"},
		{`{"dependentRequired":{"a":["b","b"]}}`, "/dependentRequired/a"},
		{`{"allOf":[]}`, "/allOf"},
		{`{"anyOf":{}}`, "/anyOf"},
		{`{"oneOf":[true,3]}`, "/oneOf/1"},
		{`{"prefixItems":[]}`, "/prefixItems"},
		{`{"items":[{}]}`, "/items"},
		{`{"properties":{"a":3}}`, "/properties/a"},
		{`{"properties":{"a/b":{"not":"x"}}}`, "/properties/a~1b/not"},
		{`{"$defs":{"a":{"type":"x"}}}`, "/$defs/a/type"},
		{`{"uniqueItems":1}`, "/uniqueItems"},
		{`{"additionalProperties":[]}`, "/additionalProperties"},
		{`{"title":1}`, "/title"},
		{`{"$anchor":"1a"}`, "/$anchor"},
		{`{"$id":"#foo"}`, "/$id"},
		{`{"$ref":"#/$defs/missing"}`, "/$ref"},
		{`{"$ref":"#nope"}`, "/$ref"},
		{`{"properties":{"a":{"$ref":"https://example.com/schema.json"}}}`, "/properties/a/$ref"},
		{`{"$ref":"other.json#/$defs/a"}`, "/$ref"},
		{`{"$schema":"https://example.com/my-draft"}`, "/$schema"},
		{`{` + d4 + `"exclusiveMaximum":3}`, "/exclusiveMaximum"},
		{`{` + d4 + `"required":[]}`, "/required"},
		{`{` + d7 + `"dependencies":{"a":["b",1]}}`, "/dependencies/a/1"},
		{`{` + d7 + `"items":[{"type":"x"}]}`, "/items/0/type"},
	}
	for _, tt := range tests {
		t.Run(tt.schema, func(t *testing.T) {
			_, err := Compile(decode(t, tt.schema))
			var se *SchemaError
			if !errors.As(err, &se) {
				t.Fatalf("error %T %v, want *SchemaError", err, err)
			}
			if se.Location != tt.location || se.Message == "" {
				t.Errorf("error at %q (%s), want at %q", se.Location, se.Message, tt.location)
			}
			if !strings.HasPrefix(se.Error(), "invalid schema") {
				t.Errorf("Error() = %q", se.Error())
			}
		})
	}
}

// TestUnusedDefs checks that, as the specification has it, a $def nothing refers
// to is checked against the metaschema but its $refs are not resolved.
func TestUnusedDefs(t *testing.T) {
	compile(t, `{"$defs":{"unused":{"$ref":"#/nowhere"}}}`)
	if _, err := Compile(decode(t, `{"$defs":{"unused":{"$ref":3}}}`)); err == nil {
		t.Error("a $ref that is not a string compiles")
	}
}

// TestDraftSchemas checks that every known $schema spelling compiles.
func TestDraftSchemas(t *testing.T) {
	for _, s := range []string{
		"http://json-schema.org/draft-04/schema#",
		"http://json-schema.org/draft-06/schema#",
		"http://json-schema.org/draft-07/schema",
		"https://json-schema.org/draft/2019-09/schema",
		"https://json-schema.org/draft/2020-12/schema",
		"https://json-schema.org/draft/2020-12/schema#",
	} {
		if _, err := Compile(map[string]any{"$schema": s, "type": "string"}); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
}

// TestGoValues checks schemas and values built in Go: []string lists, and
// values that are not JSON.
func TestGoValues(t *testing.T) {
	s, err := Compile(map[string]any{"type": "object", "required": []string{"a"}, "properties": map[string]any{"a": map[string]any{"type": []string{"string", "null"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(map[string]any{"a": nil}); err != nil {
		t.Error(err)
	}
	if err := s.Validate(map[string]any{"a": 1}); err == nil {
		t.Error("a: 1 is valid")
	}
	if _, err := Compile(map[string]any{"const": struct{}{}}); err != nil {
		t.Errorf("const of a Go value: %v", err)
	}
}

func TestMustCompilePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MustCompile of an invalid schema did not panic")
		}
	}()
	MustCompile(map[string]any{"type": "nothing"})
}

// FuzzCompileValidate checks that no schema and no value make Compile or
// Validate panic, that errors have their types, and that validation
// errors point into the value.
//
//	go test ./schema -run '^$' -fuzz FuzzCompileValidate -fuzztime 30s
func FuzzCompileValidate(f *testing.F) {
	seeds := []struct {
		schema, value string
		numbers       bool
	}{
		{`{"type":"object","properties":{"a":{"type":"string","minLength":2}},"required":["a"]}`, `{"a":"x"}`, false},
		{`{"$defs":{"n":{"properties":{"c":{"items":{"$ref":"#/$defs/n"}}}}},"$ref":"#/$defs/n"}`, `{"c":[{"c":[{}]}]}`, true},
		{`{"anyOf":[{"prefixItems":[true]},{"contains":{"const":1},"maxContains":1}],"unevaluatedItems":false}`, `[1,1]`, false},
		{`{"$ref":"#"}`, `1`, false},
		{`{"multipleOf":0.01,"exclusiveMaximum":100}`, `19.99`, true},
		{`{"$schema":"http://json-schema.org/draft-04/schema#","maximum":1,"exclusiveMaximum":true}`, `1`, false},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","items":[{}],"additionalItems":false,"dependencies":{"a":["b"]}}`, `[1,2]`, false},
		{`{"propertyNames":{"pattern":"^a"},"patternProperties":{"é":false},"unevaluatedProperties":{"$ref":"#"}}`, `{"aé":1,"b":{}}`, false},
		{`{"$id":"https://x.test/a","$defs":{"b":{"$id":"b","$anchor":"c"}},"$ref":"b#c"}`, `null`, false},
		{`{"oneOf":[{"type":"integer"},{"minimum":0}],"not":{"enum":[2]}}`, `1`, true},
	}
	for _, s := range seeds {
		f.Add(s.schema, s.value, s.numbers)
	}
	f.Fuzz(func(t *testing.T, schemaJSON, valueJSON string, numbers bool) {
		read := func(s string) (any, bool) {
			d := json.NewDecoder(bytes.NewReader([]byte(s)))
			if numbers {
				d.UseNumber()
			}
			var v any
			if err := d.Decode(&v); err != nil {
				return nil, false
			}
			return v, true
		}
		doc, ok := read(schemaJSON)
		if !ok {
			return
		}
		value, ok := read(valueJSON)
		if !ok {
			return
		}
		s, err := Compile(doc)
		if err != nil {
			var se *SchemaError
			if !errors.As(err, &se) || se.Message == "" {
				t.Fatalf("Compile error %T %v", err, err)
			}
			return
		}
		if err := s.Validate(value); err != nil {
			checkError(t, err, value)
		}
	})
}

func jsonText(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(data)
}

// checkError checks a validation error: an *Error whose leaves have
// messages and point into the value.
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
