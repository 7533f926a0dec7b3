package distribution

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"sync"

	"github.com/distribution/reference"
	"github.com/docker/docker/api/types"
	eventtypes "github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/registry"
	"github.com/docker/docker/pkg/progress"
	"github.com/docker/docker/pkg/stringid"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/stream"
	ggcrtypes "github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/gzip"
	"github.com/opencontainers/go-digest"

	"github.com/sdengine/engine/image"
	"github.com/sdengine/engine/internal/crashpoint"
	"github.com/sdengine/engine/pkg/errdefs"
)

// maxUploads is how many layers upload at once (Docker's
// max-concurrent-uploads default).
const maxUploads = 5

// How many blobs known to hold a layer a push asks the registry about
// (HEAD in the repository pushed to), and how many other repositories
// of the registry it tries to mount one from, before it uploads.
const (
	maxExistenceChecks = 5
	maxMountAttempts   = 3
)

// PushOptions is a decoded POST /images/{name}/push.
type PushOptions struct {
	Name, Tag string
	Auth      registry.AuthConfig
}

// Push uploads an image's tag (or, without one, every tag of the
// repository) as Docker schema 2 manifests, the way Docker pushes.
func (s *Service) Push(ctx context.Context, o PushOptions, out io.Writer) error {
	named, err := reference.ParseNormalizedNamed(o.Name)
	if err != nil {
		return errdefs.InvalidParameter(fmt.Errorf("invalid reference format: %w", err))
	}
	var tags []string
	switch t, ok := named.(reference.Tagged); {
	case o.Tag != "":
		tags = []string{o.Tag}
	case ok:
		tags = []string{t.Tag()}
	default:
		all, err := s.store.RepoTags(o.Name)
		if err != nil {
			return err
		}
		for t := range all {
			tags = append(tags, t)
		}
		sort.Strings(tags)
	}
	named = reference.TrimNamed(named)
	if err := s.checkBlocked(reference.Domain(named)); err != nil {
		return err
	}
	if len(tags) == 0 {
		return errdefs.NotFound(fmt.Errorf("An image does not exist locally with the tag: %s", reference.FamiliarName(named)))
	}
	// Every tag must exist before anything is sent.
	imgs := make([]*image.Image, len(tags))
	for i, t := range tags {
		tagged, err := reference.WithTag(named, t)
		if err != nil {
			return errdefs.InvalidParameter(fmt.Errorf("invalid tag %q: %w", t, err))
		}
		img, err := s.store.Get(refString(tagged))
		if err != nil {
			return errdefs.NotFound(fmt.Errorf("An image does not exist locally with the tag: %s", refString(tagged)))
		}
		imgs[i] = img
	}
	pout := progressOutput(out)
	progress.Message(pout, "", "The push refers to repository ["+named.Name()+"]")
	ep := endpoint{host: reference.Domain(named)}
	repo, err := s.repository(ep, named)
	if err != nil {
		return err
	}
	auth, rt := authenticator(o.Auth, ep), s.transportFor(ep.host)
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuth(auth),
		remote.WithTransport(rt), remote.WithUserAgent(userAgent)}
	// One pusher for the whole push: the registry is pinged and a token
	// fetched once per repository, not per request.
	rpush, err := remote.NewPusher(opts...)
	if err != nil {
		return err
	}
	opts = append(opts, remote.Reuse(rpush))
	p := &pusher{s: s, named: named, repo: repo, opts: opts, pout: pout}
	p.heads = &blobChecker{ctx: ctx, reg: repo.Registry, auth: auth, rt: rt, scopes: p.lookupScopes(imgs)}
	for i, t := range tags {
		if err := p.pushTag(ctx, t, imgs[i]); err != nil {
			return pushError(err)
		}
		if tagged, err := reference.WithTag(named, t); err == nil {
			s.event(eventtypes.ActionPush, tagged)
		}
	}
	return nil
}

type pusher struct {
	s     *Service
	named reference.Named
	repo  name.Repository
	opts  []remote.Option
	pout  progress.Output
	heads *blobChecker
}

// lookupScopes are the token scopes of every repository the push may
// ask about a blob: its own, and those the blobs of its layers were seen
// in on the same registry.
func (p *pusher) lookupScopes(imgs []*image.Image) []string {
	scopes := []string{p.repo.Scope(transport.PushScope)}
	seen := map[string]bool{p.named.Name(): true}
	for _, img := range imgs {
		for _, diffID := range img.Layers {
			for _, ref := range p.s.store.BlobRefs(diffID) {
				named, err := reference.ParseNormalizedNamed(ref.Repo)
				if err != nil || seen[ref.Repo] || reference.Domain(named) != reference.Domain(p.named) {
					continue
				}
				seen[ref.Repo] = true
				scopes = append(scopes, p.repo.Registry.Repo(reference.Path(named)).Scope(transport.PullScope))
			}
		}
	}
	return scopes
}

// blobChecker asks whether repositories of the registry have a blob
// (HEAD), all through one transport: one ping and one token for every
// repository the push looks in, where go-containerregistry's readers
// would each ping and authenticate for their own repository.
type blobChecker struct {
	ctx    context.Context
	reg    name.Registry
	auth   authn.Authenticator
	rt     http.RoundTripper
	scopes []string

	once   sync.Once
	client *http.Client
	err    error
}

func (b *blobChecker) exists(repo name.Repository, d digest.Digest) (int64, bool) {
	b.once.Do(func() {
		var rt http.RoundTripper
		rt, b.err = transport.NewWithContext(b.ctx, b.reg, b.auth, b.rt, b.scopes)
		b.client = &http.Client{Transport: transport.NewUserAgent(rt, userAgent)}
	})
	if b.err != nil {
		slog.Debug("push: cannot ask the registry about blobs; uploading", "err", b.err)
		return 0, false
	}
	u := url.URL{Scheme: repo.Scheme(), Host: repo.RegistryStr(), Path: "/v2/" + repo.RepositoryStr() + "/blobs/" + d.String()}
	req, err := http.NewRequestWithContext(b.ctx, http.MethodHead, u.String(), nil)
	if err != nil {
		return 0, false
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, false
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ContentLength < 0 {
		return 0, false
	}
	return resp.ContentLength, true
}

// schema2 is Docker's image manifest, written as Docker writes it.
type schema2 struct {
	SchemaVersion int           `json:"schemaVersion"`
	MediaType     string        `json:"mediaType"`
	Config        schema2Desc   `json:"config"`
	Layers        []schema2Desc `json:"layers"`
}

type schema2Desc struct {
	MediaType string        `json:"mediaType"`
	Size      int64         `json:"size"`
	Digest    digest.Digest `json:"digest"`
}

// rawManifest is what remote.Put sends.
type rawManifest []byte

func (m rawManifest) RawManifest() ([]byte, error) { return m, nil }
func (m rawManifest) MediaType() (ggcrtypes.MediaType, error) {
	return ggcrtypes.DockerManifestSchema2, nil
}

func (p *pusher) pushTag(ctx context.Context, tag string, img *image.Image) error {
	layers := make([]schema2Desc, len(img.Layers))
	for _, d := range img.Layers {
		progress.Update(p.pout, stringid.TruncateID(d.String()), "Preparing")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The config goes up beside the layers: only the manifest needs
	// them all.
	cfgDone := make(chan error, 1)
	go func() {
		cfg := static.NewLayer(img.RawConfig, ggcrtypes.DockerConfigJSON)
		cfgDone <- remote.WriteLayer(p.repo, cfg, p.opts...)
	}()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		sem      = make(chan struct{}, maxUploads)
	)
	for i := range img.Layers {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			id := stringid.TruncateID(img.Layers[i].String())
			select {
			case sem <- struct{}{}:
			default:
				progress.Update(p.pout, id, "Waiting")
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					return
				}
			}
			defer func() { <-sem }()
			d, err := p.pushLayer(ctx, img, i)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
					cancel()
				}
				return
			}
			layers[i] = d
		}(i)
	}
	wg.Wait()
	cfgErr := <-cfgDone
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if cfgErr != nil {
		return fmt.Errorf("push image config: %w", cfgErr)
	}
	m := schema2{SchemaVersion: 2, MediaType: string(ggcrtypes.DockerManifestSchema2),
		Config: schema2Desc{MediaType: string(ggcrtypes.DockerConfigJSON), Size: int64(len(img.RawConfig)), Digest: img.ID},
		Layers: layers}
	raw, err := json.MarshalIndent(m, "", "   ")
	if err != nil {
		return err
	}
	if err := remote.Put(p.repo.Tag(tag), rawManifest(raw), p.opts...); err != nil {
		return fmt.Errorf("push manifest: %w", err)
	}
	dgst := digest.FromBytes(raw)
	progress.Messagef(p.pout, "", "%s: digest: %s size: %d", tag, dgst, len(raw))
	progress.Aux(p.pout, types.PushResult{Tag: tag, Digest: dgst.String(), Size: len(raw)})
	if err := p.s.store.AddRepoDigest(img.ID, reference.FamiliarName(p.named)+"@"+dgst.String()); err != nil {
		slog.Warn("push: cannot record the repo digest", "err", err)
	}
	return nil
}

// reusable are the blob media types a Docker schema 2 manifest can name.
var reusable = map[string]bool{string(ggcrtypes.DockerLayer): true, string(ggcrtypes.OCILayer): true, "": true}

// pushLayer makes layer i of img present in the repository: already
// there, mounted from another repository of the registry that has a blob
// known to hold it, or compressed and uploaded.
func (p *pusher) pushLayer(ctx context.Context, img *image.Image, i int) (schema2Desc, error) {
	diffID := img.Layers[i]
	id := stringid.TruncateID(diffID.String())
	canon := p.named.Name()
	// Each blob known to hold the layer is asked for once in this
	// repository (the same digest is usually remembered from several),
	// and at most a few are: they are guesses, each a round trip before
	// the upload can start (Docker's limits: 5 checks, 3 mounts).
	var others []image.BlobRef
	checked := map[digest.Digest]bool{}
	exists := func(d digest.Digest) (schema2Desc, bool) {
		if checked[d] || len(checked) >= maxExistenceChecks {
			return schema2Desc{}, false
		}
		checked[d] = true
		size, ok := p.blobExists(p.repo, d)
		return schema2Desc{MediaType: string(ggcrtypes.DockerLayer), Size: size, Digest: d}, ok
	}
	for _, ref := range p.s.store.BlobRefs(diffID) {
		named, err := reference.ParseNormalizedNamed(ref.Repo)
		if err != nil || reference.Domain(named) != reference.Domain(p.named) || !reusable[ref.MediaType] {
			continue
		}
		if ref.Repo != canon {
			others = append(others, ref)
			continue
		}
		if d, ok := exists(ref.Digest); ok {
			progress.Update(p.pout, id, "Layer already exists")
			return d, nil
		}
	}
	mounts := 0
	for _, ref := range others {
		if d, ok := exists(ref.Digest); ok {
			progress.Update(p.pout, id, "Layer already exists")
			return d, nil
		}
		if mounts >= maxMountAttempts {
			continue
		}
		mounts++
		named, _ := reference.ParseNormalizedNamed(ref.Repo)
		src := p.repo.Registry.Repo(reference.Path(named))
		size, ok := p.blobExists(src, ref.Digest)
		if !ok {
			continue
		}
		ml := &remote.MountableLayer{Layer: knownBlob{digest: ref.Digest, diffID: diffID, size: size}, Reference: src.Digest(ref.Digest.String())}
		if err := remote.WriteLayer(p.repo, ml, p.opts...); err != nil {
			slog.Debug("push: cross-repository mount refused; uploading", "from", ref.Repo, "err", err)
			continue
		}
		progress.Update(p.pout, id, "Mounted from "+reference.Path(named))
		p.remember(diffID, ref.Digest)
		return schema2Desc{MediaType: string(ggcrtypes.DockerLayer), Size: size, Digest: ref.Digest}, nil
	}

	blob := &streamedBlob{store: p.s.store, layers: img.Layers, i: i, pout: p.pout, id: id}
	if err := remote.WriteLayer(p.repo, blob, p.opts...); err != nil {
		return schema2Desc{}, fmt.Errorf("push layer %s: %w", diffID, err)
	}
	dgst, size, err := blob.result()
	if err != nil {
		return schema2Desc{}, fmt.Errorf("push layer %s: %w", diffID, err)
	}
	progress.Update(p.pout, id, "Pushed")
	p.remember(diffID, dgst)
	crashpoint.Hit("push-after-layer")
	return schema2Desc{MediaType: string(ggcrtypes.DockerLayer), Size: size, Digest: dgst}, nil
}

func (p *pusher) remember(diffID, blob digest.Digest) {
	if err := p.s.store.AddBlobRef(diffID, image.BlobRef{Digest: blob, Repo: p.named.Name(), MediaType: string(ggcrtypes.DockerLayer)}); err != nil {
		slog.Warn("push: cannot record where a layer went", "err", err)
	}
}

// blobExists asks the registry (HEAD) whether repo has the blob.
func (p *pusher) blobExists(repo name.Repository, d digest.Digest) (int64, bool) {
	return p.heads.exists(repo, d)
}

// streamedBlob is layer i of an image, compressed while it uploads: its
// digest and size are known only once the upload has read it all, so
// go-containerregistry sends it as a streamed upload (POST, PATCH with
// the body, PUT naming the digest at the end) and no copy of the blob
// is ever written to disk. The same layer always compresses to the same
// bytes (same tar, same compressor, same level), so a blob pushed once
// is found again by its digest; the digest is remembered after the push
// (AddBlobRef) so the next push of the layer asks the registry for it
// before compressing anything.
type streamedBlob struct {
	store  *image.Store
	layers []digest.Digest
	i      int
	pout   progress.Output
	id     string

	mu     sync.Mutex
	digest digest.Digest // set once a reader reached its end
	size   int64
}

func (b *streamedBlob) Digest() (v1.Hash, error) {
	d, _, err := b.result()
	if err != nil {
		return v1.Hash{}, err
	}
	return v1.NewHash(d.String())
}

func (b *streamedBlob) Size() (int64, error) {
	_, n, err := b.result()
	return n, err
}

// result is the blob's digest and size once a reader has read it all;
// before, stream.ErrNotComputed is what tells go-containerregistry to
// stream the upload.
func (b *streamedBlob) result() (digest.Digest, int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.digest == "" {
		return "", 0, stream.ErrNotComputed
	}
	return b.digest, b.size, nil
}

func (b *streamedBlob) DiffID() (v1.Hash, error) { return v1.NewHash(b.layers[b.i].String()) }
func (b *streamedBlob) MediaType() (ggcrtypes.MediaType, error) {
	return ggcrtypes.DockerLayer, nil
}

// Compressed starts compressing the layer from its beginning; a retried
// upload calls it again and gets the same bytes.
func (b *streamedBlob) Compressed() (io.ReadCloser, error) {
	rc, tarSize, err := b.store.OpenLayer(b.layers, b.i)
	if err != nil {
		return nil, err
	}
	// Progress counts the uncompressed tar, whose size is known upfront
	// (the compressed size is not), as Docker's push does.
	src := progress.NewProgressReader(rc, b.pout, tarSize, b.id, "Pushing")
	r := &gzipReader{src: src, rc: rc, b: b, h: sha256.New(), in: make([]byte, pushChunk)}
	r.gz, err = gzip.NewWriterLevel(&r.out, gzip.DefaultCompression)
	if err != nil {
		rc.Close()
		return nil, err
	}
	return r, nil
}

func (b *streamedBlob) Uncompressed() (io.ReadCloser, error) {
	rc, _, err := b.store.OpenLayer(b.layers, b.i)
	return rc, err
}

// pushChunk is how much compressed output a push hands the connection at
// once, and how much of the layer's tar it reads at once: the HTTP
// transport copies a body through 32 KiB buffers unless the body has
// WriteTo, so each 32 KiB would cost a copy, a chunk header, two write
// syscalls and a wake-up of the registry; 256 KiB pieces cut those
// eightfold while memory stays small (five uploads at once).
const pushChunk = 256 << 10

// gzipReader compresses src as it is read, in the reader's goroutine:
// each Read compresses more of src only when what was compressed before
// has been handed out, so memory stays at one chunk and its output.
type gzipReader struct {
	src  io.Reader
	rc   io.Closer // src's source, an io.Pipe: Close may come from another goroutine while Read runs
	b    *streamedBlob
	gz   *gzip.Writer
	out  bytes.Buffer
	in   []byte
	h    hash.Hash
	n    int64
	eof  bool // src ended and gz is closed: out holds the last bytes
	done bool
	err  error
}

// fill compresses one read of src into out.
func (r *gzipReader) fill() {
	n, err := r.src.Read(r.in)
	if n > 0 {
		if _, werr := r.gz.Write(r.in[:n]); werr != nil {
			r.err = werr
			return
		}
	}
	switch {
	case err == io.EOF:
		r.err = r.gz.Close()
		r.eof = true
	case err != nil:
		// OpenLayer's own check (content no longer matching its
		// diff ID) ends here: the upload fails, nothing is committed.
		r.err = err
	}
}

// handedOut counts bytes given to the upload into the blob's digest and
// size.
func (r *gzipReader) handedOut(p []byte) {
	r.h.Write(p)
	r.n += int64(len(p))
}

// finish records the digest and size once every byte was handed out.
func (r *gzipReader) finish() error {
	if r.err != nil {
		return r.err
	}
	if !r.done {
		r.done = true
		r.b.mu.Lock()
		r.b.digest = digest.NewDigestFromEncoded(digest.SHA256, hex.EncodeToString(r.h.Sum(nil)))
		r.b.size = r.n
		r.b.mu.Unlock()
	}
	return nil
}

func (r *gzipReader) Read(p []byte) (int, error) {
	for r.out.Len() == 0 && !r.eof && r.err == nil {
		r.fill()
	}
	if r.out.Len() > 0 {
		n, _ := r.out.Read(p)
		r.handedOut(p[:n])
		return n, nil
	}
	if err := r.finish(); err != nil {
		return 0, err
	}
	return 0, io.EOF
}

// WriteTo is what the HTTP transport's body copy calls (io.CopyBuffer
// prefers it to Read): the compressed bytes go to w in pieces of about
// pushChunk, each written once, with no copy into the transport's buffer.
func (r *gzipReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		for r.out.Len() < pushChunk && !r.eof && r.err == nil {
			r.fill()
		}
		if r.out.Len() > 0 {
			p := r.out.Bytes()
			n, err := w.Write(p)
			r.handedOut(p[:n])
			r.out.Next(n)
			total += int64(n)
			if err != nil {
				return total, err
			}
			continue
		}
		return total, r.finish()
	}
}

func (r *gzipReader) Close() error { return r.rc.Close() }

// knownBlob is a blob the registry has elsewhere: it can be mounted, not
// uploaded (its bytes are not kept here).
type knownBlob struct {
	digest, diffID digest.Digest
	size           int64
}

var errNotKept = errors.New("the blob's bytes are not kept locally")

func (b knownBlob) Digest() (v1.Hash, error) { return v1.NewHash(b.digest.String()) }
func (b knownBlob) DiffID() (v1.Hash, error) { return v1.NewHash(b.diffID.String()) }
func (b knownBlob) Size() (int64, error)     { return b.size, nil }
func (b knownBlob) MediaType() (ggcrtypes.MediaType, error) {
	return ggcrtypes.DockerLayer, nil
}
func (b knownBlob) Compressed() (io.ReadCloser, error)   { return nil, errNotKept }
func (b knownBlob) Uncompressed() (io.ReadCloser, error) { return nil, errNotKept }
