// Package localaws serves DynamoDB (in-process minidyn) and S3
// (in-process gofakes3) on one loopback URL, for the crash suite's dynamo
// scenarios: an endpoint that outlives the keel processes the suite kills.
// It is a package of its own so that what links the crash suite's driver
// (every Keel program, for keel crashtest) does not link these servers.
package localaws

import (
	"bytes"
	"hash/crc32"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	miniserver "github.com/truora/minidyn/server"
)

// Server is the running endpoint.
type Server struct {
	URL string
	srv *http.Server
}

// Close stops it.
func (s *Server) Close() { _ = s.srv.Close() }

// Start serves DynamoDB and S3 on one loopback URL, routed by request
// shape the way LocalStack's single port is: DynamoDB's JSON protocol
// names its operation in X-Amz-Target, everything else is S3.
func Start() (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rt := &awsRouter{ddb: miniserver.NewServer(), s3: gofakes3.New(s3mem.New()).Server()}
	srv := &http.Server{Handler: rt, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return &Server{URL: "http://" + ln.Addr().String(), srv: srv}, nil
}

// awsRouter is the single endpoint. It also adds the X-Amz-Crc32 header
// DynamoDB puts on every response and minidyn does not: the SDK checks the
// body against it when present, and logs a checksum mismatch against 0
// when it is missing.
//
// It serves one DynamoDB request at a time: minidyn's server reads its
// table map outside its lock (getTable) while CreateTable and DeleteTable
// write it, a data race once scenarios create tables while others run
// (the race detector reports it). minidyn holds one global lock for
// nearly every operation anyway, so this costs no concurrency.
type awsRouter struct {
	ddb, s3 http.Handler
	ddbMu   sync.Mutex
}

func (rt *awsRouter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.") {
		rt.s3.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	rt.ddbMu.Lock()
	rt.ddb.ServeHTTP(rec, r)
	rt.ddbMu.Unlock()
	body := rec.Body.Bytes()
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(rec.Code)
	_, _ = bytes.NewReader(body).WriteTo(w)
}
