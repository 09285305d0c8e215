#!/usr/bin/env bash
# Prepares the oracle container (run by tests/oracle/run_oracle.py through
# `podman exec`, as root): the real Debian 12 slurmd, Slurm's own NVML
# plugin from Debian 12's contrib package slurm-wlm-nvml-plugin, the
# simulated libnvidia-ml.so.1, the REAL nvidia-ml-py binding (pynvml.py) for
# the module, the simulator (only on NVMLSIM_PYTHONPATH, for the library's
# server) and a /proc/driver/nvidia-caps the simulator can write its
# mig-minors table into.  /oracle is the read-only staging directory.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
PLUGIN_PACKAGE=slurm-wlm-nvml-plugin
PLUGIN_VERSION=${ORACLE_PLUGIN_VERSION:-22.05.8-4+deb12u2}
PLUGIN_DIR=/opt/oracle/slurm-plugins

step() { printf '[setup %3ss] %s\n' "$SECONDS" "$*"; }

apt-get -qq update
if compgen -G '/oracle/debs/slurm-smd_*.deb' >/dev/null; then
    # SchedMD's slurm-smd packages built from the release tarball (scripts/lib/smd_build.sh, GPUCLUSTER_ORACLE_SMD_DEBS):
    # slurmd and Slurm's NVML plugin installed as packages, the plugin where the package put it
    step "apt-get install $(cd /oracle/debs && echo *.deb)"
    apt-get -qq install -y --no-install-recommends /oracle/debs/*.deb >/tmp/oracle-apt-install.log 2>&1 \
        || { tail -20 /tmp/oracle-apt-install.log; exit 1; }
    PLUGIN_PACKAGE=slurm-smd
    PLUGIN_DIR=$(dirname "$(dpkg -L slurm-smd | grep '/gpu_nvml\.so$')")
    [ "$PLUGIN_DIR" != . ] || { echo "slurm-smd has no gpu_nvml.so" >&2; exit 1; }
    basic=$PLUGIN_DIR
    plugin_version=$(dpkg-query -W -f='${Version}' slurm-smd)
    # slurmd 26.05 loads its auth plugin and makes a MUNGE credential at start, -G too ("Munge encode failed: Failed
    # to access /run/munge/munge.socket.2 ... slurmd initialization failed"); 22.05's -G did not
    step "munged (slurmd 26.05 -G needs its auth plugin)"
    apt-get -qq install -y --no-install-recommends munge >>/tmp/oracle-apt-install.log 2>&1 \
        || { tail -20 /tmp/oracle-apt-install.log; exit 1; }
    [ -s /etc/munge/munge.key ] || mungekey --create
    install -d -o munge -g munge -m 0755 /run/munge
    pgrep -x munged >/dev/null || runuser -u munge -- /usr/sbin/munged
else
step "apt-get install slurmd"
apt-get -qq install -y --no-install-recommends slurmd >/tmp/oracle-apt-install.log 2>&1 \
    || { tail -20 /tmp/oracle-apt-install.log; exit 1; }

# Debian 12's plugin depends on exactly slurm-wlm-basic-plugins $PLUGIN_VERSION
# while main now carries a later deb12u*, so it is downloaded with a private
# contrib source list and extracted, not installed.
step "apt-get download $PLUGIN_PACKAGE=$PLUGIN_VERSION (contrib)"
apt_dir=/tmp/oracle-apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/x"
grep '^deb ' /etc/apt/sources.list | awk '{print "deb", $2, $3, "contrib"}' >"$apt_dir/sources.list"
apt_opts=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o Dir::Etc::sourceparts=/dev/null
          -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache")
apt-get -qq "${apt_opts[@]}" update
if ! (cd "$apt_dir" && apt-get -qq "${apt_opts[@]}" download "$PLUGIN_PACKAGE=$PLUGIN_VERSION") >"$apt_dir/download.log" 2>&1; then
    cat "$apt_dir/download.log" >&2
    exit 1
fi
deb=$(find "$apt_dir" -maxdepth 1 -name "${PLUGIN_PACKAGE}_*.deb" | head -n 1)
dpkg-deb -x "$deb" "$apt_dir/x"
mkdir -p "$PLUGIN_DIR"
install -m 0644 "$(find "$apt_dir/x" -name gpu_nvml.so)" "$PLUGIN_DIR/gpu_nvml.so"
basic=$(dirname "$(dpkg -L slurm-wlm-basic-plugins | grep '/gres_gpu\.so$')")
plugin_version=$(dpkg-deb -f "$deb" Version)
fi

step "simulated libnvidia-ml.so.1, real nvidia-ml-py, simulator"
install -m 0755 /oracle/libnvidia-ml.so.1 /usr/local/lib/libnvidia-ml.so.1
ln -sf libnvidia-ml.so.1 /usr/local/lib/libnvidia-ml.so
ldconfig
install -m 0644 /oracle/pynvml.py /usr/lib/python3/dist-packages/pynvml.py
rm -rf /opt/nvmlsim && mkdir -p /opt/nvmlsim && cp -r /oracle/nvmlsim-src/. /opt/nvmlsim/
if ldd "$PLUGIN_DIR/gpu_nvml.so" | grep -q 'not found'; then
    ldd "$PLUGIN_DIR/gpu_nvml.so"; exit 1
fi

# runc refuses bind mounts under /proc (podman -v ...:/proc/driver/nvidia-caps
# fails with "cannot be mounted because it is inside /proc"); with
# CAP_SYS_ADMIN a tmpfs can be mounted over /proc/driver from inside.
step "tmpfs on /proc/driver"
if ! mountpoint -q /proc/driver; then
    mount -t tmpfs -o size=4m,mode=0755 oracle-nvidia-caps /proc/driver
fi
mkdir -p /proc/driver/nvidia-caps

# The module must import the REAL binding, never the simulator's pynvml.
real=$(cd / && python3 -c 'import pynvml; print(pynvml.__file__, hasattr(pynvml, "SIMULATED_CALLS"))')
[ "$real" = "/usr/lib/python3/dist-packages/pynvml.py False" ] \
    || { echo "python3 imports the wrong pynvml: $real" >&2; exit 1; }

# slurm.conf for `slurmd -G`; run_oracle.py replaces @GRES@ per run. The
# NodeName line is this machine's own (slurmd -C), as a site writes it.
mkdir -p /etc/oracle /var/spool/slurmd
cat >/etc/oracle/slurm.conf.in <<EOF
ClusterName=oracle
SlurmctldHost=$(hostname)
PluginDir=$(if [ "$basic" = "$PLUGIN_DIR" ]; then echo "$basic"; else echo "$basic:$PLUGIN_DIR"; fi)
GresTypes=gpu
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SlurmdSpoolDir=/var/spool/slurmd
$(slurmd -C | head -n 1) Gres=@GRES@
PartitionName=oracle Nodes=ALL Default=YES
EOF
step "ready: $(slurmd -V), $PLUGIN_PACKAGE $plugin_version, $(nproc) CPU(s)"
