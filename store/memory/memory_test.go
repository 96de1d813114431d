package memory_test

import (
	"testing"

	"stepwise.dev/stepwise/store"
	"stepwise.dev/stepwise/store/memory"
	"stepwise.dev/stepwise/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return memory.New() })
}
