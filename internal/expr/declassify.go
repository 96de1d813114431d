package expr

import (
	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/conf"
)

// Declassify is the name of the expression function that marks a value
// computed from a secret as no longer secret: declassify(x) is x. Secrecy
// follows data (see workflow.Secrets): a reference inside a declassify call
// does not make the expression secret.
const Declassify = "declassify"

// declassifyOption registers declassify with a configuration: one argument,
// returned as it is.
var declassifyOption = expr.Function(Declassify, func(params ...any) (any, error) {
	return params[0], nil
}, new(func(any) any))

// withFunctions adds stepwise's own functions to a configuration.
func withFunctions(c *conf.Config) *conf.Config {
	declassifyOption(c)
	return c
}
