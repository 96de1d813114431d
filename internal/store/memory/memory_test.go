package memory_test

import (
	"testing"

	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/store/memory"
	"stepwise.dev/stepwise/internal/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return memory.New() })
}
