package weirtest

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// HTTPGet sends a GET to url, with token as a bearer token when it is not
// "", and returns the status code and the body. It fails the test when the
// request cannot be sent.
func HTTPGet(t testing.TB, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// MetricSum returns the sum of the samples of metric, in body, whose
// labels include every one of labels, or -1 when there is none.
func MetricSum(body, metric string, labels ...string) float64 {
	sum, found := 0.0, false
	for line := range strings.SplitSeq(body, "\n") {
		if v := MetricValue(line, metric, labels...); v >= 0 {
			sum, found = sum+v, true
		}
	}
	if !found {
		return -1
	}
	return sum
}

// MetricValue returns the value of the first sample of metric, in body
// (the Prometheus text format of a /metrics answer), whose labels include
// every one of labels (each `name="value"`), or -1 when there is none.
func MetricValue(body, metric string, labels ...string) float64 {
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, metric+"{") {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(line, l)
		}
		if !ok {
			continue
		}
		if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
			return v
		}
	}
	return -1
}
