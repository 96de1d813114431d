package mcpserver

import (
	"fmt"
	"log/slog"
	"testing"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/expr"
)

// An expression's budget error reaching a tool is EXPRESSION_BUDGET, not
// an internal error.
func TestToolErrorExpressionBudget(t *testing.T) {
	_, err := expr.Eval(`len(repeat(repeat("x", 100000), 100000))`, nil)
	te := toolError(slog.New(slog.DiscardHandler), "workflow_plan", fmt.Errorf("plan: %w", err))
	if te.ErrorCode != code.ExpressionBudget || te.Category != code.CategoryExecution || te.Retryable {
		t.Fatalf("tool error %+v, want %s (execution, not retryable)", te, code.ExpressionBudget)
	}
}
