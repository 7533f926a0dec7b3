package distribution

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/distribution/reference"
	eventtypes "github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/registry"
	"github.com/docker/docker/pkg/progress"
	"github.com/docker/docker/pkg/streamformatter"
	"github.com/docker/docker/pkg/stringid"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/sdengine/engine/image"
	"github.com/sdengine/engine/internal/crashpoint"
	"github.com/sdengine/engine/pkg/errdefs"
	"github.com/sdengine/engine/pkg/platform"
)

// maxDownloads is how many layers download at once (Docker's
// max-concurrent-downloads default).
const maxDownloads = 3

// PullOptions is a decoded POST /images/create?fromImage=...
type PullOptions struct {
	FromImage, Tag string
	Platform       string
	Auth           registry.AuthConfig
}

// syncWriter serializes the progress messages of parallel downloads.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func progressOutput(w io.Writer) progress.Output {
	if w == nil {
		return progress.DiscardOutput()
	}
	return streamformatter.NewJSONProgressOutput(&syncWriter{w: w}, false)
}

// Pull fetches an image (or, for a name without tag, every tag of it)
// into the store, writing Docker's progress messages to out.
func (s *Service) Pull(ctx context.Context, o PullOptions, out io.Writer) error {
	// The platform is checked first: a bad one is a 400 before anything.
	plat, err := parsePlatform(o.Platform)
	if err != nil {
		return err
	}
	named, all, err := ParsePullRef(o.FromImage, o.Tag)
	if err != nil {
		return err
	}
	cands, viaList, err := s.pullCandidates(named)
	if err != nil {
		return err
	}
	pout := progressOutput(out)
	if !viaList {
		return s.pullFrom(ctx, cands[0], all, plat, o.Platform != "", o.Auth, pout)
	}
	// A search list: the first registry that has the name wins; each
	// attempt and each failure names its registry.
	var failures []string
	var firstErr error
	for _, c := range cands {
		progress.Message(pout, "", "Trying to pull repository "+c.Name()+" ... ")
		err := s.pullFrom(ctx, c, all, plat, o.Platform != "", authFor(o.Auth, dockerHub, reference.Domain(c)), pout)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		slog.Info("pull: not pulled from this registry of the search list, trying the next", "ref", c.String(), "err", err)
		progress.Message(pout, "", reference.Domain(c)+": "+err.Error())
		failures = append(failures, reference.Domain(c)+": "+err.Error())
		if firstErr == nil || errdefs.IsNotFound(firstErr) {
			firstErr = err
		}
	}
	msg := fmt.Errorf("%s was not found in any registry of the search list (%s)", reference.FamiliarString(named), strings.Join(failures, "; "))
	switch errdefs.ClassOf(firstErr) {
	case errdefs.ClassUnauthorized:
		return errdefs.Unauthorized(msg)
	case errdefs.ClassForbidden:
		return errdefs.Forbidden(msg)
	case errdefs.ClassInvalidParameter:
		return errdefs.InvalidParameter(msg)
	case errdefs.ClassNotFound:
		return errdefs.NotFound(msg)
	}
	return msg
}

// pullFrom pulls named (or every tag of it) from its own registry.
func (s *Service) pullFrom(ctx context.Context, named reference.Named, all bool, plat ocispec.Platform, explicit bool, ac registry.AuthConfig, pout progress.Output) error {
	if !all {
		newer, err := s.pullOne(ctx, named, plat, explicit, ac, pout)
		if err != nil {
			return err
		}
		s.event(eventtypes.ActionPull, named)
		writeStatus(pout, named, newer)
		return nil
	}
	tags, err := s.listTags(ctx, named, ac)
	if err != nil {
		return err
	}
	newer := false
	for _, t := range tags {
		tagged, err := reference.WithTag(named, t)
		if err != nil {
			continue
		}
		n, err := s.pullOne(ctx, tagged, plat, explicit, ac, pout)
		if err != nil {
			return err
		}
		s.event(eventtypes.ActionPull, tagged)
		newer = newer || n
	}
	writeStatus(pout, named, newer)
	return nil
}

func writeStatus(pout progress.Output, named reference.Named, newer bool) {
	if newer {
		progress.Message(pout, "", "Status: Downloaded newer image for "+refString(named))
	} else {
		progress.Message(pout, "", "Status: Image is up to date for "+refString(named))
	}
}

func (s *Service) listTags(ctx context.Context, named reference.Named, ac registry.AuthConfig) ([]string, error) {
	var lastErr error
	for _, ep := range s.endpoints(named) {
		repo, err := s.repository(ep, named)
		if err != nil {
			return nil, err
		}
		tags, err := remote.List(repo, s.remoteOptions(ctx, ep, ac)...)
		if err == nil {
			return tags, nil
		}
		lastErr = err
		if ep.mirror {
			slog.Info("pull: mirror failed, trying the next endpoint", "mirror", ep.host, "err", err)
		}
	}
	return nil, pullError(lastErr, named, hasAuth(ac))
}

func (s *Service) remoteOptions(ctx context.Context, ep endpoint, ac registry.AuthConfig) []remote.Option {
	return []remote.Option{remote.WithContext(ctx), remote.WithAuth(authenticator(ac, ep)),
		remote.WithTransport(s.transportFor(ep.host)), remote.WithUserAgent(userAgent)}
}

// resolved is the image a reference led to on one endpoint.
type resolved struct {
	ep     endpoint
	repo   name.Repository
	top    digest.Digest // what the reference names: an index or a manifest
	img    v1.Image
	config []byte
}

// resolve finds named's manifest for plat on the first endpoint that has
// it: a mirror's failure falls through to the next endpoint.
func (s *Service) resolve(ctx context.Context, named reference.Named, plat ocispec.Platform, explicit bool, ac registry.AuthConfig) (*resolved, error) {
	var lastErr error
	for _, ep := range s.endpoints(named) {
		r, err := s.resolveOn(ctx, ep, named, plat, explicit, ac)
		if err == nil {
			return r, nil
		}
		if !ep.mirror || errdefs.ClassOf(err) != errdefs.ClassUnknown && errdefs.IsInvalidParameter(err) {
			return nil, err
		}
		slog.Info("pull: mirror failed, trying the next endpoint", "mirror", ep.host, "err", err)
		lastErr = err
	}
	return nil, lastErr
}

func (s *Service) resolveOn(ctx context.Context, ep endpoint, named reference.Named, plat ocispec.Platform, explicit bool, ac registry.AuthConfig) (*resolved, error) {
	repo, err := s.repository(ep, named)
	if err != nil {
		return nil, err
	}
	var ref name.Reference = repo.Tag(tagOrDigest(named))
	if d, ok := named.(reference.Digested); ok {
		ref = repo.Digest(d.Digest().String())
	}
	opts := s.remoteOptions(ctx, ep, ac)
	desc, err := remote.Get(ref, opts...)
	if err != nil {
		err = pullError(err, named, hasAuth(ac) && !ep.mirror)
		if errdefs.IsNotFound(err) && !repoExists(repo, opts) {
			// The distribution registry says "manifest unknown" for a
			// repository it does not have: Docker's answer is about the
			// repository.
			err = errdefs.NotFound(fmt.Errorf("pull access denied for %s, repository does not exist or may require 'docker login'", reference.FamiliarName(named)))
		}
		return nil, err
	}
	r := &resolved{ep: ep, repo: repo, top: digest.Digest(desc.Digest.String())}
	switch desc.MediaType {
	case types.OCIImageIndex, types.DockerManifestList:
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, pullError(err, named, hasAuth(ac))
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, pullError(err, named, hasAuth(ac))
		}
		child, ok := selectManifest(im, plat)
		if !ok {
			return nil, errdefs.NotFound(fmt.Errorf("no matching manifest for %s in the manifest list entries: no match for platform in manifest: not found", platform.Format(plat)))
		}
		r.img, err = remote.Image(repo.Digest(child.Digest.String()), opts...)
		if err != nil {
			return nil, pullError(err, named, hasAuth(ac))
		}
	case types.OCIManifestSchema1, types.DockerManifestSchema2:
		r.img, err = desc.Image()
		if err != nil {
			return nil, pullError(err, named, hasAuth(ac))
		}
	case types.DockerManifestSchema1, types.DockerManifestSchema1Signed:
		return nil, errdefs.InvalidParameter(fmt.Errorf("%s: Docker Image Format v1 and Docker Image manifest version 2, schema 1 support has been removed", refString(named)))
	default:
		return nil, errdefs.InvalidParameter(fmt.Errorf("unsupported media type %s", desc.MediaType))
	}
	m, err := r.img.Manifest()
	if err != nil {
		return nil, pullError(err, named, hasAuth(ac))
	}
	r.config, err = r.img.RawConfigFile()
	if err != nil {
		return nil, pullError(err, named, hasAuth(ac))
	}
	if got := digest.FromBytes(r.config).String(); got != m.Config.Digest.String() {
		return nil, errdefs.InvalidParameter(fmt.Errorf("image config %s does not match its digest (got %s)", m.Config.Digest, got))
	}
	if explicit {
		var cfg ocispec.Image
		if err := json.Unmarshal(r.config, &cfg); err == nil {
			if !platform.Matches(plat, cfg.Platform) {
				return nil, errdefs.NotFound(fmt.Errorf("image with reference %s was found but does not provide the specified platform (%s)", refString(named), platform.Format(plat)))
			}
		}
	}
	return r, nil
}

// pullOne pulls one tag or digest; it reports whether the reference now
// names a different image than before.
func (s *Service) pullOne(ctx context.Context, named reference.Named, plat ocispec.Platform, explicit bool, ac registry.AuthConfig, pout progress.Output) (bool, error) {
	r, err := s.resolve(ctx, named, plat, explicit, ac)
	if err != nil {
		return false, err
	}
	progress.Message(pout, tagOrDigest(named), "Pulling from "+reference.Path(named))

	var cfg ocispec.Image
	if err := json.Unmarshal(r.config, &cfg); err != nil {
		return false, errdefs.InvalidParameter(fmt.Errorf("invalid image config: %w", err))
	}
	m, err := r.img.Manifest()
	if err != nil {
		return false, err
	}
	diffIDs := cfg.RootFS.DiffIDs
	if len(diffIDs) != len(m.Layers) {
		return false, errdefs.InvalidParameter(fmt.Errorf("image config has %d diff IDs but the manifest %d layers", len(diffIDs), len(m.Layers)))
	}
	chains, err := image.ChainIDs(diffIDs)
	if err != nil {
		return false, err
	}
	id := digest.FromBytes(r.config)
	_, tagged := named.(reference.Tagged)
	before := ""
	if tagged {
		if img, err := s.store.Get(refString(named)); err == nil {
			before = img.ID.String()
		}
	}

	// Hold what is present; fetch the rest. A chain present means every
	// layer below it is too, so the present ones are a prefix.
	var held []digest.Digest
	defer func() {
		if ctx.Err() != nil {
			// The client went away: what was complete is kept for its
			// next attempt. Any other failure (a blob that does not match
			// its digest) leaves nothing of the pull.
			s.store.ReleaseLayersKeepPulled(held)
			return
		}
		s.store.ReleaseLayers(held)
	}()
	first := 0
	for attempt := 0; ; attempt++ {
		first = 0
		for first < len(chains) && s.store.AcquireLayer(chains[first]) {
			held = append(held, chains[first])
			first++
		}
		for i := 0; i < first; i++ {
			progress.Update(pout, layerID(m.Layers[i]), "Already exists")
		}
		if first == len(chains) {
			break
		}
		newHeld, err := s.fetchLayers(ctx, r, m, diffIDs, first, chains, pout)
		held = append(held, newHeld...)
		if errors.Is(err, errLayerRace) && attempt < 3 {
			// Another pull registered a layer this one had extracted
			// too: start again from what the store has now.
			slog.Info("pull: another pull registered the same layer first; resuming from the store's layers", "ref", refString(named))
			s.store.ReleaseLayers(held)
			held = nil
			continue
		}
		if err != nil {
			return false, err
		}
		break
	}

	var tags []string
	if tagged {
		tags = []string{refString(named)}
	}
	img, err := s.store.RegisterPulled(r.config, tags)
	if err != nil {
		return false, err
	}
	repoDigest := reference.FamiliarName(named) + "@" + r.top.String()
	if err := s.store.AddRepoDigest(img.ID, repoDigest); err != nil {
		slog.Warn("pull: cannot record the repo digest", "ref", repoDigest, "err", err)
	}
	if !r.ep.mirror {
		canon := reference.TrimNamed(named).Name()
		for i, l := range m.Layers {
			if err := s.store.AddBlobRef(diffIDs[i], image.BlobRef{Digest: digest.Digest(l.Digest.String()), Repo: canon, MediaType: string(l.MediaType)}); err != nil {
				slog.Warn("pull: cannot record where a layer came from", "err", err)
				break
			}
		}
	}
	progress.Message(pout, "", "Digest: "+r.top.String())
	return !tagged || before != id.String() || first < len(chains), nil
}

// repoExists asks for the repository's tags: a registry that does not
// know it says so (NAME_UNKNOWN, or 404/401). Other failures count as
// existing, so the manifest's own error stands.
func repoExists(repo name.Repository, opts []remote.Option) bool {
	_, err := remote.List(repo, opts...)
	var te *transport.Error
	if errors.As(err, &te) {
		return !(hasCode(te, transport.NameUnknownErrorCode) || te.StatusCode == http.StatusNotFound ||
			te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden)
	}
	return true
}

func layerID(d v1.Descriptor) string { return stringid.TruncateID(d.Digest.Hex) }

// fetchLayers downloads layers first.. in parallel (maxDownloads at a
// time) and applies them in order as they stream in. It returns the
// chain IDs it holds; on an error what it made is released by the
// caller, so nothing half pulled stays.
func (s *Service) fetchLayers(ctx context.Context, r *resolved, m *v1.Manifest, diffIDs []digest.Digest, first int, chains []digest.Digest, pout progress.Output) ([]digest.Digest, error) {
	for _, l := range m.Layers[first:] {
		switch l.MediaType {
		case types.DockerLayer, types.OCILayer, types.OCIUncompressedLayer, types.OCILayerZStd, types.DockerUncompressedLayer,
			types.DockerForeignLayer, types.OCIRestrictedLayer, types.OCIUncompressedRestrictedLayer:
		default:
			return nil, errdefs.InvalidParameter(fmt.Errorf("unsupported layer media type %s", l.MediaType))
		}
		progress.Update(pout, layerID(l), "Pulling fs layer")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if s.store.IndependentLayers() {
		return s.fetchStreaming(ctx, cancel, r, m, diffIDs, first, chains, pout)
	}
	return s.fetchSpooled(ctx, cancel, r, m, diffIDs, first, chains, pout)
}

// fetchStreaming is fetchLayers where layers can be extracted at once
// (overlay2): each layer is extracted as its blob streams in, verified
// at its end, with no copy anywhere; the layers are committed in order
// as they complete.
func (s *Service) fetchStreaming(ctx context.Context, cancel context.CancelFunc, r *resolved, m *v1.Manifest, diffIDs []digest.Digest, first int, chains []digest.Digest, pout progress.Output) ([]digest.Digest, error) {
	pend := make([]*image.PendingLayer, len(m.Layers))
	// Whatever is not handed to the committer is discarded, top first.
	defer func() {
		for i := len(pend) - 1; i >= first; i-- {
			if pend[i] != nil {
				pend[i].Discard()
			}
		}
	}()
	parent := digest.Digest("")
	if first > 0 {
		parent = chains[first-1]
	}
	var below *image.PendingLayer
	for i := first; i < len(m.Layers); i++ {
		p, err := s.store.PrepareLayer(parent, below, diffIDs[i])
		if err != nil {
			return nil, fmt.Errorf("pull layer %s: %w", m.Layers[i].Digest, err)
		}
		pend[i], below = p, p
	}
	results := make([]chan error, len(m.Layers))
	sem := make(chan struct{}, maxDownloads)
	for i := first; i < len(m.Layers); i++ {
		results[i] = make(chan error, 1)
		go func(i int) {
			results[i] <- s.downloadExtract(ctx, r, m.Layers[i], pend[i], sem, pout)
		}(i)
	}
	c := s.startCommitter(m, cancel, pout)
	var err error
	for i := first; i < len(m.Layers); i++ {
		if err = <-results[i]; err != nil {
			err = fmt.Errorf("pull layer %s: %w", m.Layers[i].Digest, err)
			cancel()
			for j := i + 1; j < len(m.Layers); j++ {
				<-results[j]
			}
			break
		}
		c.add(i, pend[i])
		pend[i] = nil
	}
	held, cerr := c.finish()
	if cerr != nil {
		return held, cerr
	}
	return held, err
}

// openBlob takes a download slot (sem) and opens the layer's blob: rc as
// the registry serves it, pr the same with the progress bar. release
// gives the slot back.
func openBlob(ctx context.Context, r *resolved, desc v1.Descriptor, sem chan struct{}, pout progress.Output) (rc, pr io.ReadCloser, release func(), err error) {
	id := layerID(desc)
	if err := acquire(ctx, sem, pout, id); err != nil {
		return nil, nil, nil, err
	}
	release = func() { <-sem }
	l, err := r.img.LayerByDigest(desc.Digest)
	if err == nil {
		rc, err = l.Compressed()
	}
	if err != nil {
		release()
		return nil, nil, nil, err
	}
	return rc, progress.NewProgressReader(rc, pout, desc.Size, id, "Downloading"), release, nil
}

// downloadExtract streams one blob into the extraction of its layer.
// go-containerregistry checks the blob's size and digest as it ends, so
// the blob is read to its end even when the tar ended before, and when
// the extraction fails, to tell a corrupted blob (its digest) from bad
// content.
func (s *Service) downloadExtract(ctx context.Context, r *resolved, desc v1.Descriptor, p *image.PendingLayer, sem chan struct{}, pout progress.Output) error {
	id := layerID(desc)
	rc, pr, release, err := openBlob(ctx, r, desc, sem, pout)
	if err != nil {
		return err
	}
	defer release()
	defer pr.Close()
	err = p.Extract(ctx, pr)
	if err == nil {
		_, err = io.Copy(io.Discard, pr)
	} else if ctx.Err() == nil {
		if _, derr := io.Copy(io.Discard, rc); derr != nil {
			err = derr
		}
	}
	if err != nil {
		return downloadError(desc, err)
	}
	progress.Update(pout, id, "Verifying Checksum")
	progress.Update(pout, id, "Download complete")
	return nil
}

func downloadError(desc v1.Descriptor, err error) error {
	if strings.Contains(err.Error(), "error verifying") {
		// go-containerregistry's size or digest check at the end.
		return fmt.Errorf("filesystem layer verification failed for digest %s: %w", desc.Digest, err)
	}
	return err
}

// acquire takes a download slot, saying "Waiting" if none is free.
func acquire(ctx context.Context, sem chan struct{}, pout progress.Output, id string) error {
	select {
	case sem <- struct{}{}:
		return nil
	default:
	}
	progress.Update(pout, id, "Waiting")
	select {
	case sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// committer commits extracted layers in order, in a goroutine of its
// own, so a layer is flushed to disk while the next one is extracted.
// What is extracted is committed even if the pull fails later: a client
// gone keeps it for its next attempt.
type committer struct {
	ch   chan committed
	done chan struct{}
	held []digest.Digest
	err  error
}

type committed struct {
	i int
	p *image.PendingLayer
}

func (s *Service) startCommitter(m *v1.Manifest, cancel context.CancelFunc, pout progress.Output) *committer {
	c := &committer{ch: make(chan committed, len(m.Layers)), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for x := range c.ch {
			if c.err == nil {
				c.err = s.commitPulled(x.p, m.Layers[x.i], x.i == len(m.Layers)-1, &c.held, pout)
				if c.err != nil {
					cancel()
				}
			}
			x.p.Discard()
		}
	}()
	return c
}

// add hands layer i to the committer (which discards it once done).
func (c *committer) add(i int, p *image.PendingLayer) { c.ch <- committed{i, p} }

// finish waits for every commit and returns the chain IDs held.
func (c *committer) finish() ([]digest.Digest, error) {
	close(c.ch)
	<-c.done
	return c.held, c.err
}

// fetchSpooled is fetchLayers where a layer is extracted on a copy of
// the one below it (vfs): downloads run ahead in parallel into spools
// and layers are extracted one after the other as they stream in.
func (s *Service) fetchSpooled(ctx context.Context, cancel context.CancelFunc, r *resolved, m *v1.Manifest, diffIDs []digest.Digest, first int, chains []digest.Digest, pout progress.Output) ([]digest.Digest, error) {
	dir, err := s.store.TempDir("pull-")
	if err != nil {
		return nil, fmt.Errorf("pull: %w", err)
	}
	defer os.RemoveAll(dir)

	spools := make([]*spool, len(m.Layers))
	for i := first; i < len(m.Layers); i++ {
		sp, err := newSpool(dir)
		if err != nil {
			return nil, fmt.Errorf("pull: %w", err)
		}
		spools[i] = sp
		defer sp.close()
	}
	var wg sync.WaitGroup
	// Every download ends (cancelled, if the pull failed) before the
	// spools are closed.
	defer wg.Wait()
	defer cancel()
	sem := make(chan struct{}, maxDownloads)
	for i := first; i < len(m.Layers); i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			spools[i].finish(s.download(ctx, r, m.Layers[i], spools[i], sem, pout))
		}(i)
	}

	c := s.startCommitter(m, cancel, pout)
	extractErr := func() error {
		var below *image.PendingLayer
		parent := digest.Digest("")
		if first > 0 {
			parent = chains[first-1]
		}
		for i := first; i < len(m.Layers); i++ {
			id := layerID(m.Layers[i])
			pr := progress.NewProgressReader(io.NopCloser(spools[i].reader()), pout, m.Layers[i].Size, id, "Extracting")
			p, err := s.store.ExtractLayer(ctx, parent, below, diffIDs[i], pr)
			pr.Close()
			if err != nil {
				// The download's own error says more than the extraction's.
				cancel()
				if derr := spools[i].wait(); derr != nil && !errors.Is(derr, context.Canceled) {
					err = derr
				}
				return fmt.Errorf("pull layer %s: %w", m.Layers[i].Digest, err)
			}
			// Read whole, so downloaded whole: its file goes now, before
			// a commit's flush would write it to disk for nothing.
			spools[i].close()
			c.add(i, p)
			below = p
		}
		return nil
	}()
	held, cerr := c.finish()
	if cerr != nil {
		return held, cerr
	}
	return held, extractErr
}

// errLayerRace is a pulled layer another pull committed first, with a
// layer of this pull extracted on top of this pull's copy (which goes).
var errLayerRace = errors.New("a layer was registered by another pull meanwhile")

// commitPulled commits one extracted layer, adding its chain ID to held.
func (s *Service) commitPulled(p *image.PendingLayer, desc v1.Descriptor, last bool, held *[]digest.Digest, pout progress.Output) error {
	chain, err := s.store.CommitLayer(p)
	if err != nil {
		return fmt.Errorf("pull layer %s: %w", desc.Digest, err)
	}
	*held = append(*held, chain)
	if !p.Registered() && !last {
		return errLayerRace
	}
	progress.Update(pout, layerID(desc), "Pull complete")
	crashpoint.Hit("pull-after-layer")
	return nil
}

// download copies one blob into its spool; go-containerregistry checks
// the blob's size and digest as it ends, so an error here is also what a
// corrupted blob gives.
func (s *Service) download(ctx context.Context, r *resolved, desc v1.Descriptor, sp *spool, sem chan struct{}, pout progress.Output) error {
	id := layerID(desc)
	_, pr, release, err := openBlob(ctx, r, desc, sem, pout)
	if err != nil {
		return err
	}
	defer release()
	_, err = io.Copy(sp, pr)
	pr.Close()
	if err != nil {
		if strings.Contains(err.Error(), "error verifying") {
			return downloadError(desc, err)
		}
		return fmt.Errorf("download %s: %w", desc.Digest, err)
	}
	progress.Update(pout, id, "Verifying Checksum")
	progress.Update(pout, id, "Download complete")
	return nil
}
