package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"stepwise.dev/stepwise/internal/catalog"
	"stepwise.dev/stepwise/internal/service"
)

func newCatalogCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "Import OpenAPI documents as catalogs of actions (import, list, enable, disable, remove)",
		Long: "A catalog is an OpenAPI document (Swagger 2.0, OpenAPI 3.0 or 3.1) imported into the home: each of its\n" +
			"operations becomes an action <catalog>.<operationId> that workflow steps call with uses: and with:.",
	}
	cmd.AddCommand(newCatalogImportCmd(g), newCatalogListCmd(g), newCatalogEnableCmd(g, true), newCatalogEnableCmd(g, false),
		newCatalogRemoveCmd(g))
	return cmd
}

func newCatalogImportCmd(g *globals) *cobra.Command {
	var req service.CatalogImportRequest
	var disabled, asJSON bool
	var auth []string
	cmd := &cobra.Command{
		Use:   "import FILE --title T",
		Short: "Import an OpenAPI document (a file, a URL, or - for standard input) as a catalog",
		Long: "import reads an OpenAPI document and stores it as the catalog <home>/catalogs/NAME.json (NAME from\n" +
			"--name or the title). Replacing an existing catalog needs --overwrite. Credentials are given per\n" +
			"security scheme as environment references, resolved when an operation runs:\n" +
			"  --auth 'api_key=$PETSTORE_KEY'   (an API key or bearer token)\n" +
			"  --auth 'basic=alice:$PETSTORE_PW' (basic authentication: user and password)",
		Args: exactArgs(1, "import takes one FILE (or URL, or - for standard input)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Source = args[0]
			if args[0] == "-" {
				data, err := readSource(cmd, "-")
				if err != nil {
					return err
				}
				req.Source = string(data)
			}
			creds, err := parseAuth(auth)
			if err != nil {
				return err
			}
			req.Auth, req.Enabled = creds, !disabled
			// The operator runs this command: a URL is their choice.
			return g.withOptions(service.Options{AllowCatalogURLs: true}, func(ctx context.Context, svc *service.Service) error {
				r, err := svc.ImportCatalog(ctx, req)
				if err != nil {
					return describe(err)
				}
				out := cmd.OutOrStdout()
				if asJSON {
					return writeJSON(out, r)
				}
				state := "enabled"
				if !r.Enabled {
					state = "disabled"
				}
				fmt.Fprintf(out, "imported catalog %s (%s, %d actions) at %s\n", r.Name, state, r.Operations, r.Path)
				for _, a := range r.Actions {
					fmt.Fprintf(out, "  %s\n", a)
				}
				for _, w := range r.Warnings {
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Title, "title", "", "the catalog's title (required)")
	f.StringVar(&req.Name, "name", "", "the catalog's name, the prefix of its actions (default: from the title)")
	f.StringVar(&req.BaseURL, "base-url", "", "where calls go (default: the document's first server)")
	f.BoolVar(&req.Overwrite, "overwrite", false, "replace a catalog of the same name")
	f.BoolVar(&disabled, "disabled", false, "import without registering its actions (enable later)")
	f.StringArrayVar(&auth, "auth", nil, "SCHEME=$NAME or SCHEME=USER:$NAME (basic): a credential for a security scheme (repeatable)")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// parseAuth reads --auth values: SCHEME=$NAME, or SCHEME=USER:$NAME for
// basic authentication. The service refuses anything that is not an
// environment reference where a secret goes.
func parseAuth(values []string) (map[string]catalog.Credential, error) {
	if len(values) == 0 {
		return nil, nil
	}
	out := map[string]catalog.Credential{}
	for _, v := range values {
		scheme, cred, ok := strings.Cut(v, "=")
		if !ok || scheme == "" || cred == "" {
			return nil, usageErr("--auth %s: want SCHEME=$NAME or SCHEME=USER:$NAME", scheme)
		}
		if user, pw, isBasic := strings.Cut(cred, ":"); isBasic {
			out[scheme] = catalog.Credential{Username: user, Password: pw}
		} else {
			out[scheme] = catalog.Credential{Value: cred}
		}
	}
	return out, nil
}

func newCatalogListCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the catalogs",
		Args:  exactArgs(0, "catalog list takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.with(func(ctx context.Context, svc *service.Service) error {
				cs, err := svc.ListCatalogs(ctx)
				if err != nil {
					return describe(err)
				}
				out := cmd.OutOrStdout()
				if asJSON {
					return writeJSON(out, map[string]any{"catalogs": cs})
				}
				if len(cs) == 0 {
					fmt.Fprintln(out, "no catalogs")
					return nil
				}
				return printCatalogs(out, cs)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printCatalogs(out io.Writer, cs []service.CatalogInfo) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tACTIONS\tBASE URL\tTITLE")
	for _, c := range cs {
		state := "enabled"
		if !c.Enabled {
			state = "disabled"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", c.Name, state, c.Operations, c.BaseURL, c.Title)
	}
	return tw.Flush()
}

func newCatalogEnableCmd(g *globals, enable bool) *cobra.Command {
	verb := "enable"
	short := "Enable a catalog: its operations become actions"
	if !enable {
		verb, short = "disable", "Disable a catalog: its actions leave the registry"
	}
	return &cobra.Command{
		Use:   verb + " NAME",
		Short: short,
		Args:  exactArgs(1, verb+" takes one catalog NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.with(func(ctx context.Context, svc *service.Service) error {
				c, err := svc.SetCatalogEnabled(ctx, args[0], enable)
				if err != nil {
					return describe(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%sd catalog %s (%d actions)\n", verb, c.Name, c.Operations)
				return nil
			})
		},
	}
}

func newCatalogRemoveCmd(g *globals) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a catalog and its actions",
		Args:  exactArgs(1, "remove takes one catalog NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			return g.with(func(ctx context.Context, svc *service.Service) error {
				c, err := svc.GetCatalog(ctx, name)
				if err != nil {
					return describe(err)
				}
				if err := confirmInTerminal(cmd, fmt.Sprintf("Remove catalog %s and its %d actions?", name, c.Operations), yes); err != nil {
					return err
				}
				if _, err := svc.RemoveCatalog(ctx, name); err != nil {
					return describe(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed catalog %s\n", name)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "do not ask for confirmation")
	return cmd
}

// withOptions is with for a command that needs service options of its own.
func (g *globals) withOptions(opts service.Options, fn func(ctx context.Context, svc *service.Service) error) error {
	opts.ActionOutput, opts.ShutdownGrace = io.Discard, 2*time.Second
	svc, err := g.openWith(context.Background(), opts)
	if err != nil {
		return err
	}
	defer svc.Close(context.Background())
	return fn(context.Background(), svc)
}
