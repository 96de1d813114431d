package web

import (
	"html/template"
	"net/http"
	"strings"
	"time"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/graph"
	"stepwise.dev/stepwise/internal/service"
)

type workflowsData struct {
	Query     string
	Workflows []workflowRow
}

type workflowRow struct {
	service.WorkflowSummary
	Stats *service.RunStats
}

// maxStatsListed bounds the workflows whose run stats a list reads.
const maxStatsListed = 200

func (h *Handler) workflowsPage(w http.ResponseWriter, r *http.Request, c caller) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	list, err := h.svc.ListLibrary(r.Context(), service.ListOptions{Pattern: q, IncludeDrafts: true})
	if err != nil {
		h.fail(w, r, c, err)
		return
	}
	d := workflowsData{Query: q}
	for i, s := range list {
		row := workflowRow{WorkflowSummary: s}
		if i < maxStatsListed && !s.Draft {
			if det, err := h.svc.GetWorkflow(r.Context(), s.Name); err == nil {
				st := det.Stats
				row.Stats = &st
			}
		}
		d.Workflows = append(d.Workflows, row)
	}
	h.render(w, r, "workflows", h.page(c, "Workflows", "workflows", d))
}

type workflowData struct {
	*service.WorkflowDetail
	Graph    template.HTML
	Runs     []runRow
	Versions []versionRow // newest first
}

// maxVersions bounds the versions a workflow's page lists.
const maxVersions = 50

type versionRow struct {
	Version    string
	RecordedAt time.Time
	Current    bool
}

func (h *Handler) workflowPage(w http.ResponseWriter, r *http.Request, c caller) {
	name := r.PathValue("name")
	det, err := h.svc.GetWorkflow(r.Context(), name)
	if err != nil {
		h.fail(w, r, c, err)
		return
	}
	d := workflowData{WorkflowDetail: det}
	if l, err := h.svc.LoadLibraryWorkflow(name); err == nil && countSteps(l.Workflow.Steps) <= maxGraphSteps {
		if svg, err := graph.SVG(l.Workflow, graph.SVGOptions{}); err == nil {
			d.Graph = template.HTML(svg) // graph.SVG escapes what it draws
		}
	}
	runs, _, err := h.svc.ListRuns(r.Context(), service.RunFilter{Workflow: det.Name, Limit: 20})
	if err == nil {
		for _, v := range runs {
			d.Runs = append(d.Runs, rowOf(v, time.Now()))
		}
	}
	if vs, err := h.svc.WorkflowVersions(r.Context(), det.Name, maxVersions); err == nil {
		for _, v := range vs {
			d.Versions = append(d.Versions, versionRow{Version: v.Version, RecordedAt: v.RecordedAt, Current: v.Version == det.Version})
		}
	}
	h.render(w, r, "workflow", h.page(c, "Workflow "+det.Name, "workflows", d))
}

type catalogsData struct {
	Catalogs []service.CatalogInfo
	Confirm  *service.CatalogInfo // the catalog whose change waits for a confirmation
	Enable   bool
}

func (h *Handler) catalogsPage(w http.ResponseWriter, r *http.Request, c caller) {
	h.showCatalogs(w, r, c, http.StatusOK, "", nil, false)
}

func (h *Handler) showCatalogs(w http.ResponseWriter, r *http.Request, c caller, status int, msg string, confirm *service.CatalogInfo, enable bool) {
	list, err := h.svc.ListCatalogs(r.Context())
	if err != nil {
		h.fail(w, r, c, err)
		return
	}
	d := catalogsData{Confirm: confirm, Enable: enable}
	for _, ci := range list {
		d.Catalogs = append(d.Catalogs, ci.Brief(20))
	}
	w.WriteHeader(status)
	h.render(w, r, "catalogs", h.page(c, "Catalogs", "catalogs", d).with(msg))
}

// catalogSet serves POST /catalogs/{name}: enable or disable, once
// confirmed.
func (h *Handler) catalogSet(w http.ResponseWriter, r *http.Request, c caller) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "the form could not be read", http.StatusBadRequest)
		return
	}
	if !h.checkPost(w, r, c) {
		return
	}
	name := r.PathValue("name")
	enable := r.PostFormValue("enabled") == "true"
	if r.PostFormValue("confirm") != "yes" {
		ci, err := h.svc.GetCatalog(r.Context(), name)
		if err != nil {
			h.fail(w, r, c, err)
			return
		}
		h.showCatalogs(w, r, c, http.StatusOK, "", ci, enable)
		return
	}
	if _, err := h.svc.SetCatalogEnabled(r.Context(), name, enable); err != nil {
		h.fail(w, r, c, err)
		return
	}
	http.Redirect(w, r, "/catalogs", http.StatusSeeOther)
}

type actionsData struct {
	Query   string
	Results []service.SearchResult
	Action  *action.Info
	Schemas []schemaBlock
}

type schemaBlock struct{ Title, JSON string }

func (h *Handler) actionsPage(w http.ResponseWriter, r *http.Request, c caller) {
	q := r.URL.Query()
	d := actionsData{Query: strings.TrimSpace(q.Get("q"))}
	if name := q.Get("name"); name != "" {
		a, ok := h.svc.Actions.Get(name)
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			h.render(w, r, "error", h.page(c, "Error", "actions", nil).with("No action named "+name+"."))
			return
		}
		info := action.InfoOf(a)
		d.Action = &info
		d.Schemas = []schemaBlock{{"Input (with:)", jsonText(info.InputSchema)}, {"Output", jsonText(info.OutputSchema)}}
	}
	res, err := h.svc.SearchActions(r.Context(), d.Query, true, service.MaxSearchLimit)
	if err != nil {
		h.fail(w, r, c, err)
		return
	}
	d.Results = res
	h.render(w, r, "actions", h.page(c, "Actions", "actions", d))
}
