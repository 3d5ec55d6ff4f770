// The load's requests over the wire, through REST or Connect, and how it
// classes their answers.

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/internal/benchrepo"
)

// send makes one attempt at a write on a replica. With cut, the client
// gives up after that long (and the answer is then ambiguous).
func (l *load) send(ctx context.Context, wr *write, replica int, cut time.Duration) attempt {
	timeout := l.o.requestTimeout
	if cut > 0 {
		timeout = cut
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t0 := time.Now()
	var a attempt
	if wr.Via == "connect" {
		a = l.sendConnect(ctx, l.eps[replica], wr)
	} else {
		a = l.sendREST(ctx, l.eps[replica], wr)
	}
	a.End = time.Now()
	a.Latency, a.Replica = a.End.Sub(t0), replica
	a.Cut = cut > 0 && a.Class == ambiguous && ctx.Err() != nil
	return a
}

func (l *load) sendREST(ctx context.Context, ep endpoint, wr *write) attempt {
	method, body := http.MethodDelete, []byte(nil)
	if wr.Op == "put" {
		method, body = http.MethodPut, wr.body()
	}
	req, err := http.NewRequestWithContext(ctx, method, ep.base+benchrepo.Path+"/"+wr.Name, bytes.NewReader(body))
	if err != nil {
		return attempt{Outcome: "request error", Class: ambiguous, Err: err.Error()}
	}
	req.Header.Set("Idempotency-Key", wr.Key)
	req.Header.Set("Content-Type", "application/json")
	res, err := l.hc.Do(req)
	if err != nil {
		return attempt{Outcome: "transport error", Class: ambiguous, Err: err.Error()}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return attempt{Outcome: fmt.Sprintf("%d, then transport error", res.StatusCode), Class: ambiguous, Err: err.Error()}
	}
	a := attempt{Outcome: strconv.Itoa(res.StatusCode), Class: statusClass(res.StatusCode)}
	switch {
	case res.StatusCode/100 == 2:
		a.Commit = res.Header.Get("Cup-Commit")
		a.Replayed = res.Header.Get("Idempotent-Replayed") == "true"
		a.Unchanged = res.StatusCode == http.StatusNoContent
	default:
		var e struct{ Code, Message string }
		_ = json.Unmarshal(b, &e)
		a.Outcome += " " + e.Code
		a.Err = e.Message
	}
	return a
}

// statusClass is what an HTTP status says about a write.
func statusClass(status int) class {
	switch {
	case status/100 == 2:
		return accepted
	case status/100 == 4 && status != 499: // 499: the request was cancelled
		return refused
	}
	return ambiguous
}

func (l *load) sendConnect(ctx context.Context, ep endpoint, wr *write) attempt {
	var res *cupv1alpha1.WriteResult
	var err error
	if wr.Op == "put" {
		spec, serr := structpb.NewStruct(wr.Spec)
		if serr != nil {
			return attempt{Outcome: "request error", Class: ambiguous, Err: serr.Error()}
		}
		var out *connect.Response[cupv1alpha1.PutResponse]
		out, err = ep.rc.Put(ctx, connect.NewRequest(&cupv1alpha1.PutRequest{
			Group: group, Version: version, Plural: plural, Namespace: namespace, Name: wr.Name, IdempotencyKey: wr.Key,
			Resource: &cupv1alpha1.Resource{Metadata: &cupv1alpha1.ObjectMeta{Labels: wr.Labels}, Spec: spec},
		}))
		if err == nil {
			res = out.Msg.GetResult()
		}
	} else {
		var out *connect.Response[cupv1alpha1.DeleteResponse]
		out, err = ep.rc.Delete(ctx, connect.NewRequest(&cupv1alpha1.DeleteRequest{
			Group: group, Version: version, Plural: plural, Namespace: namespace, Name: wr.Name, IdempotencyKey: wr.Key,
		}))
		if err == nil {
			res = out.Msg.GetResult()
		}
	}
	if err != nil {
		// A transport error is a Connect error too (unavailable, unknown):
		// ambiguous either way.
		c := connect.CodeOf(err)
		return attempt{Outcome: "connect " + c.String(), Class: codeClass(c), Err: err.Error()}
	}
	return attempt{Outcome: "connect ok", Class: accepted, Commit: res.GetCommit(), Replayed: res.GetReplayed(),
		Unchanged: res.GetOutcome() == cupv1alpha1.WriteOutcome_WRITE_OUTCOME_UNCHANGED}
}

// codeClass is what a Connect code says about a write: the codes the
// Connect protocol maps to 4xx statuses are refusals.
func codeClass(c connect.Code) class {
	switch c {
	case connect.CodeInvalidArgument, connect.CodeFailedPrecondition, connect.CodeOutOfRange,
		connect.CodeNotFound, connect.CodeAlreadyExists, connect.CodeAborted, connect.CodePermissionDenied,
		connect.CodeResourceExhausted, connect.CodeUnauthenticated:
		return refused
	}
	return ambiguous
}

func (l *load) getREST(ctx context.Context, r *reader, name string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.eps[r.replica].base+benchrepo.Path+"/"+name, nil)
	if err != nil {
		return "request error"
	}
	res, err := l.hc.Do(req)
	if err != nil {
		return "transport error"
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return "transport error"
	}
	if res.StatusCode != http.StatusOK {
		var e struct{ Code string }
		_ = json.Unmarshal(b, &e)
		return strings.TrimSpace(strconv.Itoa(res.StatusCode) + " " + e.Code)
	}
	var item struct {
		Metadata struct{ Labels map[string]string }
	}
	if err := json.Unmarshal(b, &item); err != nil {
		return "200 but not JSON"
	}
	r.saw(name, item.Metadata.Labels, res.Header.Get("Cup-Commit"))
	return "200"
}

func (l *load) getConnect(ctx context.Context, r *reader, name string) string {
	res, err := l.eps[r.replica].rc.Get(ctx, connect.NewRequest(&cupv1alpha1.GetRequest{
		Group: group, Version: version, Plural: plural, Namespace: namespace, Name: name,
	}))
	if err != nil {
		return connect.CodeOf(err).String()
	}
	r.saw(name, res.Msg.GetResource().GetMetadata().GetLabels(), res.Msg.GetCommit())
	return "ok"
}

func (l *load) listREST(ctx context.Context, r *reader) string {
	url := l.eps[r.replica].base + benchrepo.Path
	if r.rng.IntN(2) == 0 {
		url += fmt.Sprintf("?labelSelector=team%%3Dteam-%d", r.rng.IntN(7))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "request error"
	}
	res, err := l.hc.Do(req)
	if err != nil {
		return "transport error"
	}
	defer res.Body.Close()
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		return "transport error"
	}
	return strconv.Itoa(res.StatusCode)
}

func (l *load) listConnect(ctx context.Context, r *reader) string {
	res, err := l.eps[r.replica].rc.List(ctx, connect.NewRequest(&cupv1alpha1.ListRequest{
		Group: group, Version: version, Plural: plural, Namespace: namespace, PageSize: 100,
	}))
	if err != nil {
		return connect.CodeOf(err).String()
	}
	for _, it := range res.Msg.GetItems() {
		r.saw(it.GetMetadata().GetName(), it.GetMetadata().GetLabels(), res.Msg.GetCommit())
	}
	return "ok"
}
