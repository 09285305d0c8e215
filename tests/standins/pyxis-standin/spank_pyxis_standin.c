/*
 * STAND-IN for NVIDIA pyxis. This is NOT pyxis.
 *
 * A tiny but real SPANK plugin used by gpucluster.bringup's tests (tests/standins/README.md)
 * where the real pyxis source archive cannot be downloaded. It is built, installed and loaded
 * exactly like pyxis: `make` against the installed Slurm's <slurm/spank.h>, `make install`
 * to $(libdir)/slurm/spank_pyxis.so, one `required ... spank_pyxis.so OPTIONS` line in a
 * plugstack.conf drop-in.
 *
 * What it reproduces of pyxis (facts from pyxis' config.c, args.c, pyxis_*.c):
 *   - the plugstack options runtime_path, execute_entrypoint, container_scope (job|global),
 *     sbatch_support, use_enroot_load, importer, use_squashfuse with pyxis' value rules;
 *     any other option is "unknown configuration option" and makes init fail, so a
 *     `required` plugin stops the command;
 *   - the configuration is parsed in the slurmd, allocator (sbatch/salloc) and slurmstepd
 *     contexts; srun (local context) only registers the options, as pyxis does;
 *   - the srun/sbatch options --container-image, --container-mounts, --container-workdir,
 *     --container-name, --container-save, --[no-]container-mount-home,
 *     --[no-]container-remap-root, --[no-]container-entrypoint, --container-entrypoint-log,
 *     --container-writable, --container-readonly, --container-env; each help text starts
 *     with "[pyxis STAND-IN]" so `srun --help` shows what is loaded;
 *   - slurmd creates runtime_path (mode 0755) at init.
 * What it does NOT do: run containers. A job step that asks for a container fails with
 * "pyxis STAND-IN: cannot run containers".
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <slurm/spank.h>

SPANK_PLUGIN(pyxis, 1)

#ifndef PYXIS_STANDIN_VERSION
#define PYXIS_STANDIN_VERSION "0.0.0-standin"
#endif

struct standin_config {
	char runtime_path[4096];
	bool sbatch_support;
};

static bool container_requested = false;

static int parse_bool(const char *s)
{
	if (!strcmp(s, "1") || !strcmp(s, "true") || !strcmp(s, "yes") || !strcmp(s, "y"))
		return 1;
	if (!strcmp(s, "0") || !strcmp(s, "false") || !strcmp(s, "no") || !strcmp(s, "n"))
		return 0;
	return -1;
}

static int parse_config(struct standin_config *config, int ac, char **av)
{
	static const char *bools[] = {"execute_entrypoint=", "sbatch_support=", "use_enroot_load=", "use_squashfuse=", NULL};

	snprintf(config->runtime_path, sizeof(config->runtime_path), "%s", "/run/pyxis");
	config->sbatch_support = true;
	for (int i = 0; i < ac; ++i) {
		const char *arg = av[i];
		bool known = false;

		for (int b = 0; bools[b] != NULL; ++b) {
			size_t len = strlen(bools[b]);
			if (strncmp(arg, bools[b], len) == 0) {
				int val = parse_bool(arg + len);
				if (val < 0) {
					slurm_error("pyxis: %.*s: invalid value: %s", (int)(len - 1), bools[b], arg + len);
					return -1;
				}
				if (strcmp(bools[b], "sbatch_support=") == 0)
					config->sbatch_support = val;
				known = true;
			}
		}
		if (known)
			continue;
		if (strncmp(arg, "runtime_path=", 13) == 0) {
			int ret = snprintf(config->runtime_path, sizeof(config->runtime_path), "%s", arg + 13);
			if (ret < 0 || (size_t)ret >= sizeof(config->runtime_path)) {
				slurm_error("pyxis: runtime_path: path too long: %s", arg + 13);
				return -1;
			}
		} else if (strncmp(arg, "container_scope=", 16) == 0) {
			if (strcmp(arg + 16, "job") != 0 && strcmp(arg + 16, "global") != 0) {
				slurm_error("pyxis: container_scope: invalid value: %s", arg + 16);
				return -1;
			}
		} else if (strncmp(arg, "importer=", 9) == 0) {
			if (strlen(arg + 9) >= 4096) {
				slurm_error("pyxis: importer: path too long: %s", arg + 9);
				return -1;
			}
		} else {
			slurm_error("pyxis: unknown configuration option: %s", arg);
			return -1;
		}
	}
	return 0;
}

static int option_with_arg(int val, const char *optarg, int remote)
{
	if (optarg == NULL || *optarg == '\0') {
		slurm_error("pyxis: option requires an argument");
		return -1;
	}
	container_requested = true;
	return 0;
}

static int option_flag(int val, const char *optarg, int remote)
{
	return 0;
}

struct spank_option spank_opts[] = {
	{"container-image", "[USER@][REGISTRY#]IMAGE[:TAG]|PATH",
	 "[pyxis STAND-IN] the image to use for the container filesystem (the stand-in cannot run containers)", 1, 0, option_with_arg},
	{"container-mounts", "SRC:DST[:FLAGS][,SRC:DST...]", "[pyxis STAND-IN] bind mount[s] inside the container", 1, 0, option_with_arg},
	{"container-workdir", "PATH", "[pyxis STAND-IN] working directory inside the container", 1, 0, option_with_arg},
	{"container-name", "NAME", "[pyxis STAND-IN] name to use for saving and loading the container on the host", 1, 0, option_with_arg},
	{"container-save", "PATH", "[pyxis STAND-IN] save the container state to a squashfs file", 1, 0, option_with_arg},
	{"container-mount-home", NULL, "[pyxis STAND-IN] bind mount the user's home directory", 0, 1, option_flag},
	{"no-container-mount-home", NULL, "[pyxis STAND-IN] do not bind mount the user's home directory", 0, 0, option_flag},
	{"container-remap-root", NULL, "[pyxis STAND-IN] ask to be remapped to root inside the container", 0, 1, option_flag},
	{"no-container-remap-root", NULL, "[pyxis STAND-IN] do not remap to root inside the container", 0, 0, option_flag},
	{"container-entrypoint", NULL, "[pyxis STAND-IN] execute the entrypoint from the container image", 0, 1, option_flag},
	{"no-container-entrypoint", NULL, "[pyxis STAND-IN] do not execute the entrypoint from the container image", 0, 0, option_flag},
	{"container-entrypoint-log", NULL, "[pyxis STAND-IN] print the output of the entrypoint script", 0, 1, option_flag},
	{"container-writable", NULL, "[pyxis STAND-IN] make the container filesystem writable", 0, 1, option_flag},
	{"container-readonly", NULL, "[pyxis STAND-IN] make the container filesystem read-only", 0, 0, option_flag},
	{"container-env", "NAME[,NAME...]", "[pyxis STAND-IN] names of environment variables to override with the host environment", 1, 0,
	 option_with_arg},
	SPANK_OPTIONS_TABLE_END
};

static int register_options(spank_t sp)
{
	for (int i = 0; spank_opts[i].name != NULL; ++i) {
		spank_err_t rc = spank_option_register(sp, &spank_opts[i]);
		if (rc != ESPANK_SUCCESS) {
			slurm_error("pyxis: couldn't register option %s: %s", spank_opts[i].name, spank_strerror(rc));
			return -1;
		}
	}
	return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	struct standin_config config;
	mode_t mask;
	int ret;

	switch (spank_context()) {
	case S_CTX_LOCAL:
		return register_options(sp);
	case S_CTX_ALLOCATOR:
		if (parse_config(&config, ac, av) < 0) {
			slurm_error("pyxis: failed to parse configuration");
			return -1;
		}
		return config.sbatch_support ? register_options(sp) : 0;
	case S_CTX_SLURMD:
		if (parse_config(&config, ac, av) < 0) {
			slurm_error("pyxis: failed to parse configuration");
			return -1;
		}
		mask = umask(0);
		ret = mkdir(config.runtime_path, 0755);
		(void)umask(mask);
		if (ret < 0 && errno != EEXIST) {
			slurm_error("pyxis: slurmd: couldn't mkdir %s: %s", config.runtime_path, strerror(errno));
			return -1;
		}
		slurm_info("pyxis STAND-IN %s loaded (gpucluster.bringup test plugin, not NVIDIA pyxis)", PYXIS_STANDIN_VERSION);
		return 0;
	case S_CTX_REMOTE:
		if (parse_config(&config, ac, av) < 0) {
			slurm_error("pyxis: failed to parse configuration");
			return -1;
		}
		return register_options(sp);
	default:
		return 0;
	}
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	if (spank_context() == S_CTX_REMOTE && container_requested) {
		slurm_error("pyxis STAND-IN: cannot run containers (gpucluster.bringup test plugin, not NVIDIA pyxis)");
		return -1;
	}
	return 0;
}
