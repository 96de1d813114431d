package stepwise_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise"
	"stepwise.dev/stepwise/code"
)

// greeting is a workflow that asks a question, then calls the Go action
// "greet" with the answer.
const greeting = `
version: 1
name: greeting
inputs:
  punctuation: {type: string, default: "!"}
steps:
  - id: who
    ask:
      prompt: Whom shall I greet?
      type: string
      default: world
  - id: greet
    uses: greet
    with:
      name: ${{ steps.who.answer }}
      punctuation: ${{ inputs.punctuation }}
outputs:
  text: ${{ steps.greet.output.text }}
`

// GreetIn and GreetOut are the Go action's input and output.
type GreetIn struct {
	Name        string `json:"name" jsonschema:"whom to greet"`
	Punctuation string `json:"punctuation,omitempty"`
}

type GreetOut struct {
	Text string `json:"text"`
}

func greet(_ context.Context, in GreetIn) (GreetOut, error) {
	return GreetOut{Text: "Hello, " + in.Name + in.Punctuation}, nil
}

// openTemp opens an engine on a new temporary home (what Config.Home
// would name in a program).
func openTemp(ctx context.Context) (*stepwise.Engine, func()) {
	home, err := os.MkdirTemp("", "stepwise-example-")
	if err != nil {
		log.Fatal(err)
	}
	eng, err := stepwise.Open(ctx, stepwise.Config{Home: home})
	if err != nil {
		log.Fatal(err)
	}
	return eng, func() { _ = eng.Close(ctx); _ = os.RemoveAll(home) }
}

func ExampleOpen() {
	ctx := context.Background()
	home, err := os.MkdirTemp("", "stepwise-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(home)

	eng, err := stepwise.Open(ctx, stepwise.Config{Home: home})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close(ctx)

	runs, _, err := eng.List(ctx, stepwise.ListOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(runs), "runs")
	// Output: 0 runs
}

func ExampleEngine_RegisterAction() {
	ctx := context.Background()
	eng, done := openTemp(ctx)
	defer done()

	err := eng.RegisterAction(stepwise.Action{
		Name:        "shout",
		Description: "Upper-cases a text.",
		Safety:      code.ReadOnly,
		InputSchema: []byte(`{"type": "object", "properties": {"text": {"type": "string"}},
			"required": ["text"], "additionalProperties": false}`),
		Run: func(_ context.Context, call stepwise.Call) (any, error) {
			return strings.ToUpper(call.Input["text"].(string)), nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	run, err := eng.StartDefinition(ctx, []byte(`
version: 1
name: loud
steps:
  - id: s
    uses: shout
    with: {text: quiet please}
outputs:
  said: ${{ steps.s.output }}
`), nil)
	if err != nil {
		log.Fatal(err)
	}
	run, err = eng.Wait(ctx, run.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(run.Status, run.Outputs["said"])
	// Output: succeeded QUIET PLEASE
}

func ExampleNewAction() {
	ctx := context.Background()
	eng, done := openTemp(ctx)
	defer done()

	// The schemas come from GreetIn and GreetOut: a step giving greet a
	// key GreetIn lacks, or no name, is refused.
	if err := eng.RegisterAction(stepwise.NewAction("greet", "Greets someone.", greet)); err != nil {
		log.Fatal(err)
	}
	_, err := eng.StartDefinition(ctx, []byte(`
version: 1
name: typo
steps:
  - id: g
    uses: greet
    with: {nmae: Ada}
`), nil)
	var serr *stepwise.Error
	if errors.As(err, &serr) {
		fmt.Println(serr.Code)
	}
	// Output: WORKFLOW_INVALID
}

func ExampleEngine_Start() {
	ctx := context.Background()
	eng, done := openTemp(ctx)
	defer done()
	if err := eng.RegisterAction(stepwise.NewAction("greet", "Greets someone.", greet)); err != nil {
		log.Fatal(err)
	}
	name, err := eng.SaveWorkflow(ctx, []byte(greeting))
	if err != nil {
		log.Fatal(err)
	}

	run, err := eng.Start(ctx, name, map[string]any{"punctuation": "."})
	if err != nil {
		log.Fatal(err)
	}
	run, err = eng.Wait(ctx, run.ID) // until it asks
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(run.Status, run.Pause.Question.Prompt)

	run, err = eng.Continue(ctx, run.Pause.Token, "Ada")
	if err != nil {
		log.Fatal(err)
	}
	run, err = eng.Wait(ctx, run.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(run.Status, run.Outputs["text"])
	// Output:
	// waiting Whom shall I greet?
	// succeeded Hello, Ada.
}

func ExampleEngine_MountTools() {
	ctx := context.Background()
	eng, done := openTemp(ctx)
	defer done()
	if err := eng.RegisterAction(stepwise.NewAction("greet", "Greets someone.", greet)); err != nil {
		log.Fatal(err)
	}

	// The program's own MCP server, with stepwise's tools on it.
	server := mcp.NewServer(&mcp.Implementation{Name: "myapp", Version: "v1"}, nil)
	if err := eng.MountTools(server, stepwise.MountOptions{Tools: "core"}); err != nil {
		log.Fatal(err)
	}

	// A client connected in memory (a real one comes over stdio or HTTP).
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil)
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_start",
		Arguments: map[string]any{"definition": greeting}})
	if err != nil {
		log.Fatal(err)
	}
	out := res.StructuredContent.(map[string]any)
	pause := out["pause"].(map[string]any)
	fmt.Println(out["status"], pause["prompt"])

	// The agent relays the question and answers with the pause's token;
	// the run goes on to the Go action.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_continue",
		Arguments: map[string]any{"token": pause["token"], "value": "Ada"}})
	if err != nil {
		log.Fatal(err)
	}
	out = res.StructuredContent.(map[string]any)
	fmt.Println(out["status"], out["outputs"].(map[string]any)["text"])
	// Output:
	// waiting Whom shall I greet?
	// succeeded Hello, Ada!
}

func ExampleEngine_MountWorkflow() {
	ctx := context.Background()
	eng, done := openTemp(ctx)
	defer done()
	if err := eng.RegisterAction(stepwise.NewAction("greet", "Greets someone.", greet)); err != nil {
		log.Fatal(err)
	}
	if _, err := eng.SaveWorkflow(ctx, []byte(greeting)); err != nil {
		log.Fatal(err)
	}

	server := mcp.NewServer(&mcp.Implementation{Name: "myapp", Version: "v1"}, nil)
	if err := eng.MountWorkflow(server, "greeting", stepwise.MountOptions{}); err != nil {
		log.Fatal(err)
	}

	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(t.Name)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greeting_start", Arguments: map[string]any{"punctuation": "?"}})
	if err != nil {
		log.Fatal(err)
	}
	token := res.StructuredContent.(map[string]any)["pause"].(map[string]any)["token"]
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "greeting_continue", Arguments: map[string]any{"token": token, "value": "Grace"}})
	if err != nil {
		log.Fatal(err)
	}
	out := res.StructuredContent.(map[string]any)
	fmt.Println(out["status"], out["outputs"].(map[string]any)["text"])
	// Output:
	// greeting_continue
	// greeting_start
	// succeeded Hello, Grace?
}
