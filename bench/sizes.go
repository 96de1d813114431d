package main

// Sizes are the counts of one mode. Every mode measures the same figures
// under the same names; only the counts change, and the table says which
// mode it is.
type Sizes struct {
	Mode string
	// SerialSteps is the length of the one serial run; RawCommits the
	// raw transactions measured before and after it.
	SerialSteps, RawCommits int
	// ConcurrentRuns runs of ConcurrentSteps steps each run at once.
	ConcurrentRuns, ConcurrentSteps int
	// Continues is the number of run_continue calls timed.
	Continues int
	// Calls is the number of run_get calls per load (sequential, 8 in
	// flight) per server and transport.
	Calls int
	// Spawns is the number of server starts whose median is taken.
	Spawns int
	// Waiting is the number of runs the server holds waiting.
	Waiting int
	// Stored runs are in the database; Reads calls of run_get and of
	// run_list are timed on it.
	Stored, Reads int
	// PG are the sizes of the PostgreSQL figures measured beside DBOS
	// (-peer dbos).
	PG PGSizes
}

// PGSizes are the counts of the PostgreSQL figures beside DBOS.
type PGSizes struct {
	// Serial is the length of the one serial run.
	Serial int
	// Runs runs of Steps steps each run at once (the 64 × 100).
	Runs, Steps int
	// Effects 10-step runs of effect steps are timed one after another.
	Effects int
	// Continues is the number of answers timed.
	Continues int
}

var (
	// fullSizes are the issue's: 64 concurrent runs, 10,000 waiting runs,
	// 100,000 stored runs.
	fullSizes = Sizes{Mode: "full", SerialSteps: 3000, RawCommits: 2000, ConcurrentRuns: 64, ConcurrentSteps: 150,
		Continues: 2000, Calls: 3000, Spawns: 21, Waiting: 10_000, Stored: 100_000, Reads: 2000,
		PG: PGSizes{Serial: 3000, Runs: 64, Steps: 100, Effects: 300, Continues: 1000}}
	// quickSizes finish well under two minutes on a 2-core machine.
	quickSizes = Sizes{Mode: "quick", SerialSteps: 500, RawCommits: 500, ConcurrentRuns: 64, ConcurrentSteps: 15,
		Continues: 300, Calls: 400, Spawns: 5, Waiting: 1000, Stored: 5000, Reads: 300,
		PG: PGSizes{Serial: 1000, Runs: 64, Steps: 100, Effects: 100, Continues: 300}}
	// smokeSizes prove that every measurement produces a number.
	smokeSizes = Sizes{Mode: "smoke", SerialSteps: 30, RawCommits: 30, ConcurrentRuns: 64, ConcurrentSteps: 2,
		Continues: 20, Calls: 20, Spawns: 1, Waiting: 20, Stored: 200, Reads: 20,
		PG: PGSizes{Serial: 30, Runs: 64, Steps: 2, Effects: 5, Continues: 20}}
)
