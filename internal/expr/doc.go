// Package expr implements stepwise's ${{ }} expressions: scanning templates
// for embedded expressions, parsing them with expr-lang, collecting the
// references they make (so validation can reject `inputs.regoin` before a
// run starts), and evaluating them with bounded time and memory.
//
// A template is any string. When it consists of exactly one ${{ expr }}
// (surrounding whitespace allowed), evaluation yields the typed value of the
// expression; otherwise every expression is rendered to text and spliced in.
// The sequence $${{ is an escape that yields a literal ${{.
package expr
