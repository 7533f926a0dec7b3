package image

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/distribution/reference"
	dockerconfig "github.com/docker/cli/cli/config"
	configtypes "github.com/docker/cli/cli/config/types"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/registry"
	"github.com/docker/docker/pkg/jsonmessage"
	"github.com/spf13/cobra"

	"github.com/sdengine/engine/cli/command"
)

// dockerHubAuthKey is the key Docker's CLI files Docker Hub's credentials under.
const dockerHubAuthKey = "https://index.docker.io/v1/"

// authKey is the credential store's key for the registry host.
func authKey(host string) string {
	if host == "docker.io" || host == "index.docker.io" || host == "registry-1.docker.io" {
		return dockerHubAuthKey
	}
	return host
}

// registryAuth is the X-Registry-Auth value for host, from the docker
// CLI's config file and credential helpers (~/.docker/config.json, or
// $DOCKER_CONFIG), as the stock CLI sends it; "" when none is stored.
func registryAuth(host string) string {
	cf, err := dockerconfig.Load(dockerconfig.Dir())
	if err != nil {
		return ""
	}
	key := authKey(host)
	ac, err := cf.GetAuthConfig(key)
	if err != nil || (ac.Username == "" && ac.IdentityToken == "" && ac.RegistryToken == "") {
		return ""
	}
	enc, err := registry.EncodeAuthConfig(registry.AuthConfig{Username: ac.Username, Password: ac.Password,
		Auth: ac.Auth, ServerAddress: key, IdentityToken: ac.IdentityToken, RegistryToken: ac.RegistryToken})
	if err != nil {
		return ""
	}
	return enc
}

// buildAuthConfigs are a build's X-Registry-Config: every stored
// credential, by registry, as the stock CLI sends them, so that FROM can
// pull from a registry the user logged in to.
func buildAuthConfigs() map[string]registry.AuthConfig {
	cf, err := dockerconfig.Load(dockerconfig.Dir())
	if err != nil {
		return nil
	}
	all, err := cf.GetAllCredentials()
	if err != nil || len(all) == 0 {
		return nil
	}
	out := make(map[string]registry.AuthConfig, len(all))
	for k, ac := range all {
		out[k] = registry.AuthConfig{Username: ac.Username, Password: ac.Password, Auth: ac.Auth,
			ServerAddress: ac.ServerAddress, IdentityToken: ac.IdentityToken, RegistryToken: ac.RegistryToken}
	}
	return out
}

// displayQuiet reads a progress stream to its end, printing nothing but
// returning its error.
func displayQuiet(r io.Reader) error {
	err := jsonmessage.DisplayJSONMessagesStream(r, io.Discard, 0, false, nil)
	var jerr *jsonmessage.JSONError
	if errors.As(err, &jerr) {
		return command.StatusError{Status: jerr.Message, StatusCode: 1}
	}
	return err
}

// NewPullCommand is "docker pull".
func NewPullCommand(cli *command.Cli) *cobra.Command {
	var o image.PullOptions
	var quiet bool
	cmd := &cobra.Command{
		Use:   "pull [OPTIONS] NAME[:TAG|@DIGEST]",
		Short: "Download an image from a registry",
		Args:  command.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			named, err := reference.ParseNormalizedNamed(args[0])
			if err != nil {
				return fmt.Errorf("invalid reference format: %w", err)
			}
			if o.All && !reference.IsNameOnly(named) {
				return errors.New("tag can't be used with --all-tags/-a")
			}
			if !o.All {
				named = reference.TagNameOnly(named)
			}
			o.RegistryAuth = registryAuth(reference.Domain(named))
			c, err := cli.Client()
			if err != nil {
				return err
			}
			rc, err := c.ImagePull(cmd.Context(), reference.FamiliarString(named), o)
			if err != nil {
				return err
			}
			return displayTransfer(cli, rc, quiet, named.String())
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&o.All, "all-tags", "a", false, "Download all tagged images in the repository")
	f.StringVar(&o.Platform, "platform", os.Getenv("DOCKER_DEFAULT_PLATFORM"), "Set platform if server is multi-platform capable")
	f.BoolVarP(&quiet, "quiet", "q", false, "Suppress verbose output")
	f.Bool("disable-content-trust", true, "Skip image verification (content trust is not supported)")
	return cmd
}

// NewPushCommand is "docker push".
func NewPushCommand(cli *command.Cli) *cobra.Command {
	var all, quiet bool
	cmd := &cobra.Command{
		Use:   "push [OPTIONS] NAME[:TAG]",
		Short: "Upload an image to a registry",
		Args:  command.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			named, err := reference.ParseNormalizedNamed(args[0])
			if err != nil {
				return fmt.Errorf("invalid reference format: %w", err)
			}
			if all && !reference.IsNameOnly(named) {
				return errors.New("tag can't be used with --all-tags/-a")
			}
			if !all {
				named = reference.TagNameOnly(named)
			}
			c, err := cli.Client()
			if err != nil {
				return err
			}
			rc, err := c.ImagePush(cmd.Context(), reference.FamiliarString(named),
				image.PushOptions{All: all, RegistryAuth: registryAuth(reference.Domain(named))})
			if err != nil {
				return err
			}
			return displayTransfer(cli, rc, quiet, named.String())
		},
	}
	cmd.Flags().BoolVarP(&all, "all-tags", "a", false, "Push all tags of an image to the repository")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "Suppress verbose output")
	cmd.Flags().Bool("disable-content-trust", true, "Skip image signing (content trust is not supported)")
	return cmd
}

// NewLoginCommand is "docker login": the daemon checks the credentials
// against the registry, then they are stored as Docker's CLI stores them.
func NewLoginCommand(cli *command.Cli) *cobra.Command {
	var user, pass string
	var passStdin bool
	cmd := &cobra.Command{
		Use:   "login [OPTIONS] [SERVER]",
		Short: "Authenticate to a registry",
		Args:  command.RequiresMaxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			server := dockerHubAuthKey
			if len(args) == 1 {
				server = authKey(strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(args[0], "https://"), "http://"), "/"))
			}
			if passStdin {
				if pass != "" {
					return errors.New("--password and --password-stdin are mutually exclusive")
				}
				b, err := io.ReadAll(cli.In())
				if err != nil {
					return err
				}
				pass = strings.TrimRight(string(b), "\r\n")
			}
			if user == "" || pass == "" {
				if !cli.In().IsTerminal() {
					return errors.New("cannot perform an interactive login from a non TTY device")
				}
				r := bufio.NewReader(cli.In())
				if user == "" {
					fmt.Fprint(cli.Out(), "Username: ")
					line, _ := r.ReadString('\n')
					user = strings.TrimSpace(line)
				}
				if pass == "" {
					fmt.Fprint(cli.Out(), "Password: ")
					line, _ := r.ReadString('\n')
					pass = strings.TrimRight(line, "\r\n")
				}
			}
			c, err := cli.Client()
			if err != nil {
				return err
			}
			ac := registry.AuthConfig{Username: user, Password: pass, ServerAddress: server}
			resp, err := c.RegistryLogin(cmd.Context(), ac)
			if err != nil {
				return err
			}
			cf, err := dockerconfig.Load(dockerconfig.Dir())
			if err != nil {
				return err
			}
			stored := configtypes.AuthConfig{Username: user, Password: pass, ServerAddress: server}
			if resp.IdentityToken != "" {
				stored.Password, stored.IdentityToken = "", resp.IdentityToken
			}
			if err := cf.GetCredentialsStore(server).Store(stored); err != nil {
				return fmt.Errorf("error saving credentials: %w", err)
			}
			fmt.Fprintln(cli.Out(), resp.Status)
			return nil
		},
	}
	cmd.Flags().StringVarP(&user, "username", "u", "", "Username")
	cmd.Flags().StringVarP(&pass, "password", "p", "", "Password or Personal Access Token (PAT)")
	cmd.Flags().BoolVar(&passStdin, "password-stdin", false, "Take the Password or Personal Access Token (PAT) from stdin")
	return cmd
}

// NewLogoutCommand is "docker logout": the stored credentials go.
func NewLogoutCommand(cli *command.Cli) *cobra.Command {
	return &cobra.Command{
		Use:   "logout [SERVER]",
		Short: "Log out from a registry",
		Args:  command.RequiresMaxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			server := dockerHubAuthKey
			if len(args) == 1 {
				server = authKey(strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(args[0], "https://"), "http://"), "/"))
			}
			cf, err := dockerconfig.Load(dockerconfig.Dir())
			if err != nil {
				return err
			}
			if _, ok := cf.AuthConfigs[server]; !ok && cf.CredentialsStore == "" {
				fmt.Fprintf(cli.Out(), "Not logged in to %s\n", server)
				return nil
			}
			fmt.Fprintf(cli.Out(), "Removing login credentials for %s\n", server)
			if err := cf.GetCredentialsStore(server).Erase(server); err != nil {
				fmt.Fprintf(cli.Err(), "WARNING: could not erase credentials: %s: %v\n", server, err)
			}
			return nil
		},
	}
}

// displayTransfer shows a pull's or push's progress stream, or with quiet
// only the image's name once it is done (errors still shown).
func displayTransfer(cli *command.Cli, rc io.ReadCloser, quiet bool, name string) error {
	defer rc.Close()
	if !quiet {
		return displayStream(cli, rc)
	}
	if err := displayQuiet(rc); err != nil {
		return err
	}
	fmt.Fprintln(cli.Out(), name)
	return nil
}
