package cri

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/distribution/reference"
	"github.com/docker/docker/api/types/filters"
	imagetypes "github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/registry"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/sdengine/engine/api/server/backend"
	"github.com/sdengine/engine/pkg/errdefs"
)

func (s *Server) ListImages(ctx context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	f := filters.NewArgs()
	if ref := req.GetFilter().GetImage().GetImage(); ref != "" {
		f.Add("reference", ref)
	}
	list, err := s.b.ImageList(ctx, false, f)
	if err != nil {
		return nil, err
	}
	var out []*runtimeapi.Image
	for _, sum := range list {
		img, err := s.b.ImageInspect(ctx, sum.ID, nil)
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, criImage(img))
	}
	return &runtimeapi.ListImagesResponse{Images: out}, nil
}

// criImage is the CRI's view of an image: the user it runs as is a uid
// when numeric, else a name.
func criImage(img *imagetypes.InspectResponse) *runtimeapi.Image {
	out := &runtimeapi.Image{
		Id:          img.ID,
		RepoTags:    img.RepoTags,
		RepoDigests: img.RepoDigests,
		Size:        uint64(max(img.Size, 0)),
		Spec:        &runtimeapi.ImageSpec{Image: img.ID},
	}
	if img.Config != nil && img.Config.User != "" {
		user, _, _ := strings.Cut(img.Config.User, ":")
		if uid, err := strconv.ParseInt(user, 10, 64); err == nil {
			out.Uid = &runtimeapi.Int64Value{Value: uid}
		} else {
			out.Username = user
		}
	}
	return out
}

// ImageStatus answers with no image, and no error, for an image that is
// not there: that is how the kubelet learns it must pull.
func (s *Server) ImageStatus(ctx context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	ref := req.GetImage().GetImage()
	if ref == "" {
		return nil, invalid("image status: no image")
	}
	img, err := s.b.ImageInspect(ctx, ref, nil)
	if err != nil {
		if errdefs.IsNotFound(err) || errdefs.IsInvalidParameter(err) {
			return &runtimeapi.ImageStatusResponse{}, nil
		}
		return nil, err
	}
	resp := &runtimeapi.ImageStatusResponse{Image: criImage(img)}
	if req.Verbose {
		b, err := json.Marshal(img)
		if err != nil {
			return nil, err
		}
		resp.Info = map[string]string{"info": string(b)}
	}
	return resp, nil
}

// PullImage pulls a reference (a name without tag means :latest, as for
// the kubelet's other runtimes) and answers with the image's ID.
func (s *Server) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	ref := req.GetImage().GetImage()
	if ref == "" {
		return nil, invalid("pull: no image")
	}
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return nil, invalid("pull %q: %v", ref, err)
	}
	named = reference.TagNameOnly(named)
	var auth registry.AuthConfig
	if a := req.GetAuth(); a != nil {
		auth = registry.AuthConfig{
			Username: a.Username, Password: a.Password, Auth: a.Auth,
			ServerAddress: a.ServerAddress, IdentityToken: a.IdentityToken, RegistryToken: a.RegistryToken,
		}
	}
	if err := s.b.ImagePull(ctx, backend.PullParams{FromImage: named.String(), Auth: auth}, io.Discard); err != nil {
		return nil, fmt.Errorf("pull %s: %w", named, err)
	}
	img, err := s.b.ImageInspect(ctx, named.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w", named, err)
	}
	return &runtimeapi.PullImageResponse{ImageRef: img.ID}, nil
}

// RemoveImage removes an image by name (that name only) or by ID (every
// name it has). An image that is not there is already removed.
func (s *Server) RemoveImage(ctx context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	ref := req.GetImage().GetImage()
	if ref == "" {
		return nil, invalid("remove image: no image")
	}
	img, err := s.b.ImageInspect(ctx, ref, nil)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return &runtimeapi.RemoveImageResponse{}, nil
		}
		return nil, err
	}
	byID := strings.HasPrefix(img.ID, ref) || strings.HasPrefix(img.ID, "sha256:"+ref)
	if byID {
		ref = img.ID
	}
	if _, err := s.b.ImageDelete(ctx, ref, byID, true); err != nil && !errdefs.IsNotFound(err) {
		return nil, err
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}

// ImageFsInfo reports the filesystem of the image store: the bytes and
// inodes of the storage driver's directory. Walking it costs a few
// milliseconds per thousand files; the kubelet asks about once a minute.
func (s *Server) ImageFsInfo(ctx context.Context, req *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	info, err := s.b.SystemInfo(ctx)
	if err != nil {
		return nil, err
	}
	// The daemon keeps its storage drivers below <data root>/graph
	// (daemon.New): the kubelet stats this mountpoint for the device
	// (eviction, image GC), and fails on one that does not exist.
	dir := filepath.Join(info.DockerRootDir, "graph", info.Driver)
	var bytes, inodes uint64
	seen := map[uint64]bool{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a layer removed meanwhile
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			if seen[st.Ino] {
				return nil // a hard link counts once
			}
			seen[st.Ino] = true
			bytes += uint64(st.Blocks) * 512
		}
		inodes++
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("image filesystem usage: %w", err)
	}
	usage := &runtimeapi.FilesystemUsage{
		Timestamp:  time.Now().UnixNano(),
		FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: dir},
		UsedBytes:  &runtimeapi.UInt64Value{Value: bytes},
		InodesUsed: &runtimeapi.UInt64Value{Value: inodes},
	}
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{usage}}, nil
}
