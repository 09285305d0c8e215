# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""perftest's ib_write_bw: the parser of its output (validation/_perftest.py) and the STAND-IN (tests/standins/ib_write_bw-standin).

The parser reads the samples of ``tests/unit/fixtures/deep/perftest`` (written in perftest's printf layouts, see the
README there).  The stand-in runs as subprocesses on a simulated node (``nvmlsim create``, its InfiniBand sysfs tree
under ``$NVMLSIM_ROOT``): a server and a client meet over TCP on loopback, two HCAs of the node against each other
(``ib_write_bw -d mlx5_0 -p P -F --report_gbits -D 2 &`` then ``ib_write_bw -d mlx5_1 -p P -F --report_gbits -D 2
localhost``), and what both print is read back with the parser.  Faults are injected with the simulator's own
command (``nvmlsim ib``, ``pcie``, ``module``, ``xid``) and with the stand-in's failure modes.
"""

from __future__ import absolute_import, division, print_function

import json
import os
import shutil
import socket
import subprocess
import sys
import time

import pytest

from nvmlsim import cli

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._perftest import parse_bw, parse_json, to_gbps

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "..")
STANDIN = os.path.abspath(os.path.join(ROOT, "tests", "standins", "ib_write_bw-standin"))
FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures", "deep", "perftest")
MIB = 1024 * 1024


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


# --- the parser on perftest's layouts ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name,expected", [
    ("24.07_client_report_gbits.txt", {"test": "RDMA_Write BW Test", "device": "mlx5_1", "link": "IB", "mtu": 4096,
                                       "units": "Gb/sec", "rows": 1, "first": (65536, 5000, 390.76, 388.12, 0.740280),
                                       "gbps": 388.12, "warnings": 0}),
    ("24.07_server_duration_report_gbits.txt", {"test": "RDMA_Write BW Test", "device": "mlx5_0", "units": "Gb/sec",
                                                "rows": 1, "first": (65536, 4435844, 0.0, 387.61, 0.739307), "gbps": 387.61,
                                                "warnings": 1}),
    ("24.07_client_two_qps_mib.txt", {"device": "mlx5_3", "units": "MiB/sec", "rows": 1,
                                      "first": (1048576, 4000, 23147.3, 23055.08, 0.023055), "gbps": 193.400029}),
    # REPORT_FMT_EXT for the rows below 0.1 Gb/s (six decimals), REPORT_FMT for the others
    ("24.07_client_all_sizes_report_gbits.txt", {"units": "Gb/sec", "rows": 23, "first": (2, 5000, 0.042367, 0.04224, 2.64),
                                                 "last_bytes": 8388608, "gbps": 388.0}),
    ("mb_sec_server_roce_duration.txt", {"link": "Ethernet", "units": "MB/sec", "rows": 1,
                                         "first": (65536, 1125161, 0.0, 11720.43, 0.187527), "gbps": 98.318093, "warnings": 1}),
    ("bw_min_column_report_gbits.txt", {"units": "Gb/sec", "rows": 1, "first": (65536, 5000, 390.02, 387.9, 0.739861),
                                        "bw_min": 371.55, "gbps": 387.9}),
    ("24.07_client_bidirectional_report_gbits.txt", {"test": "RDMA_Write Bidirectional BW Test", "rows": 1, "gbps": 773.9}),
])
def test_parses_perftest_reports(name, expected):
    result = parse_bw(fixture(name))
    assert result["error"] == ""
    for key in ("test", "device", "link", "mtu", "units"):
        if key in expected:
            assert result[key] == expected[key], key
    assert len(result["rows"]) == expected["rows"]
    if "first" in expected:
        row = result["rows"][0]
        assert (row["bytes"], row["iterations"]) == expected["first"][:2]
        assert [row["bw_peak"], row["bw_avg"], row["msg_rate"]] == pytest.approx(list(expected["first"][2:]), abs=1e-6)
    if "last_bytes" in expected:
        assert result["rows"][-1]["bytes"] == expected["last_bytes"]
    if "bw_min" in expected:
        assert result["rows"][0]["bw_min"] == expected["bw_min"]
    assert result["bw_avg_gbps"] == pytest.approx(expected["gbps"], abs=1e-6)
    assert len(result["warnings"]) == expected.get("warnings", 0)
    assert result["port"] is None       # perftest does not print the IB port it used


@pytest.mark.parametrize("name,error,rows,port", [
    ("error_unknown_device.txt", "IB device mlx5_9 not found\nUnable to find the Infiniband/RoCE device", 0, None),
    ("error_no_devices.txt", "Did not detect devices\nIf device exists, check if driver is up\n"
                             "Unable to find the Infiniband/RoCE device", 0, None),
    ("error_port_down.txt", "Port number 1 state is Down\nCouldn't set the link layer\nCouldn't get context for the device", 0, 1),
    ("error_connect_refused.txt", "Couldn't connect to gpu-02:18515\nUnable to open file descriptor for socket connection\n"
                                  "Unable to init the socket connection", 0, None),
    ("error_connect_refused_one_line.txt", "Couldn't connect to 10.55.206.82:18515\nUnable to open file descriptor for socket "
                                           "connection Unable to init the socket connection", 0, None),
    ("error_unresolved_host.txt", "Name or service not known for ai_family: 2 service: gpu-99 port: 18515\nProblem in resolving "
                                  "basic address and port\nUnable to open file descriptor for socket connection\n"
                                  "Unable to init the socket connection", 0, None),
    ("error_completion_client.txt", "Completion with error at client\nFailed status 12: wr_id 0 syndrom 0x81\nscnt=128, ccnt=0\n"
                                    "Failed to complete run_iter_bw function successfully", 0, None),
    ("error_peer_gone_server.txt", "ethernet_read_keys: Couldn't read remote address\nUnable to read to socket/rdma_cm\n"
                                   "Failed to exchange data between server and clients", 0, None),
    # a run that failed after its table keeps its rows
    ("error_bw_limit_client.txt", "Error: BW result is below bw limit", 1, None),
    ("error_bad_argument.txt", "Tx depth should be between 1 and 15000\nParser function exited with Error", 0, None),
])
def test_perftest_errors_are_returned_not_raised(name, error, rows, port):
    result = parse_bw(fixture(name))
    assert result["error"] == error
    assert len(result["rows"]) == rows
    assert result["port"] == port
    assert result["bw_avg_gbps"] == (120.3 if rows else None)


TABLE_HEADER = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"


@pytest.mark.parametrize("text,message", [
    ("", "not a perftest result"),
    ("hello world\n", "not a perftest result"),
    ("Version: 6.22\n", "not a perftest result"),
    ("Usage:\n  ib_write_bw            start a server and wait for connection\n", "not a perftest result"),
    # a paste cut inside the row (as linux-rdma/perftest#234 shows one)
    (TABLE_HEADER + " 65536      664644\n", "2 fields, its header 5"),
    (TABLE_HEADER + " 65536      5000             390.76             abc\t\t   0.740280\n", "'abc' where a number belongs"),
    (TABLE_HEADER + " 65536      50.5             390.76             388.12\t\t   0.740280\n", "'50.5' where a whole number"),
    (TABLE_HEADER, "without a result row"),
    (TABLE_HEADER.replace("   MsgRate[Mpps]", ""), "without BW average or MsgRate"),
    ("387.412233\n", "bare number"),
    (fixture("24.07_out_json_output_bandwidth.json"), "not valid JSON"),
    ('{"test_info": {}}', "'test_info' and 'results'"),
    ('{"test_info": {}, "results": {"MsgSize": 65536}}', "lack 'n_iterations'"),
    ('{"test_info": {}, "results": {"MsgSize": 65536, "n_iterations": "5", "BW_peak": 1, "BW_average": 1, "MsgRate": 1}}',
     "'n_iterations' is not a number"),
])
def test_what_is_not_perftest_output_raises(text, message):
    with pytest.raises(ValueError, match=message.replace("[", "\\[").replace("(", "\\(")):
        parse_bw(text, units="Gb/sec")


def test_non_text_raises():
    with pytest.raises(ValueError, match="must be text"):
        parse_bw(b" #bytes")


@pytest.mark.parametrize("value,units,gbps", [
    (388.12, "Gb/sec", 388.12),
    (1000.0, "MB/sec", 8.388608),       # perftest's MB is 2^20 bytes: format_factor 0x100000
    (46268.7, "MiB/sec", 388.129987),
    (None, "Gb/sec", None),
])
def test_units_as_perftest_means_them(value, units, gbps):
    assert to_gbps(value, units) == gbps


def test_an_unknown_unit_raises():
    with pytest.raises(ValueError, match="unknown perftest bandwidth unit"):
        to_gbps(1.0, "GB/sec")


@pytest.mark.parametrize("units,gbps", [("Gb/sec", 388.12), ("MiB/sec", 3.255787)])
def test_the_json_report_needs_its_units(units, gbps):
    result = parse_json(fixture("24.07_out_json_report_gbits.json"), units)
    assert result["test"] == "RDMA_Write BW Test"
    assert (result["device"], result["link"], result["mtu"], result["units"]) == ("mlx5_1", "IB", 4096, units)
    assert result["rows"] == [{"bytes": 65536, "iterations": 5000, "bw_peak": 390.76, "bw_avg": 388.12, "msg_rate": 0.74028}]
    assert result["bw_avg_gbps"] == gbps
    with pytest.raises(ValueError, match="does not say its units"):
        parse_bw(fixture("24.07_out_json_report_gbits.json"))


def _empty(**changes):
    """parse_bw's whole result with ``changes``: what a report that names nothing else reads as."""
    result = {"test": None, "device": None, "port": None, "link": None, "mtu": None, "units": None, "rows": [],
              "bw_avg_gbps": None, "error": "", "warnings": []}
    result.update(changes)
    return result


ROW_388 = {"bytes": 65536, "iterations": 5000, "bw_peak": 390.76, "bw_avg": 388.12, "msg_rate": 0.74028}
INFO_HEAD = ("                    RDMA_Write   BW Test\n Dual-port       : OFF\t\tDevice         : mlx5_2\n"
             " Mtu             : 2048[B]\n Link type       : Ethernet\n")
PORTS_TABLE = (" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]   BW Port1[Gb/sec]   MsgRate Port1[Mpps]\n"
               " 65536      5000             390.76             388.12 \t\t   0.740280  194.06  0.370140\n")


@pytest.mark.parametrize("text,expected", [
    (fixture("24.07_client_report_gbits.txt"),
     _empty(test="RDMA_Write BW Test", device="mlx5_1", link="IB", mtu=4096, units="Gb/sec", rows=[ROW_388], bw_avg_gbps=388.12)),
    (fixture("24.07_server_duration_report_gbits.txt"),
     _empty(test="RDMA_Write BW Test", device="mlx5_0", link="IB", mtu=4096, units="Gb/sec", bw_avg_gbps=387.61,
            rows=[{"bytes": 65536, "iterations": 4435844, "bw_peak": 0.0, "bw_avg": 387.61, "msg_rate": 0.739307}],
            warnings=["WARNING: BW peak won't be measured in this run."])),
    (fixture("error_port_down.txt"),
     _empty(port=1, error="Port number 1 state is Down\nCouldn't set the link layer\nCouldn't get context for the device")),
    (fixture("error_bw_limit_client.txt"),
     _empty(test="RDMA_Write BW Test", device="mlx5_1", link="IB", mtu=4096, units="Gb/sec", bw_avg_gbps=120.3,
            rows=[{"bytes": 65536, "iterations": 5000, "bw_peak": 121.07, "bw_avg": 120.3, "msg_rate": 0.229454}],
            error="Error: BW result is below bw limit")),
    # the optional #sl, BW min and CPU_Util columns; the title's spaces made single; MiB/sec read as 2^20 bytes
    (INFO_HEAD + " #bytes  #sl   #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]   BW min[MiB/sec]   CPU_Util[%]\n"
                 " 65536   3     5000             1000.5             1000.0 \t\t   0.016  990.25  12.50\n",
     _empty(test="RDMA_Write BW Test", device="mlx5_2", link="Ethernet", mtu=2048, units="MiB/sec", bw_avg_gbps=8.388608,
            rows=[{"bytes": 65536, "sl": 3, "iterations": 5000, "bw_peak": 1000.5, "bw_avg": 1000.0, "msg_rate": 0.016,
                   "bw_min": 990.25, "cpu_util": 12.5}])),
    # per-port columns keep their names
    (PORTS_TABLE, _empty(units="Gb/sec", bw_avg_gbps=388.12, rows=[dict(ROW_388, **{"BW Port1[Gb/sec]": 194.06, "MsgRate Port1[Mpps]": 0.37014})])),
    # --report-both: the run's table first, then its halves (not read); the first title, device, MTU and link type hold
    (INFO_HEAD + INFO_HEAD.replace("mlx5_2", "mlx5_7").replace("2048", "4096").replace("Ethernet", "IB").replace("RDMA_Write", "Send")
     + PORTS_TABLE + " local\n" + PORTS_TABLE.replace("388.12", "100.00").replace("MsgRate Port1[Mpps]", ""),
     _empty(test="RDMA_Write BW Test", device="mlx5_2", link="Ethernet", mtu=2048, units="Gb/sec", bw_avg_gbps=388.12,
            rows=[dict(ROW_388, **{"BW Port1[Gb/sec]": 194.06, "MsgRate Port1[Mpps]": 0.37014})])),
    # both spellings of a warning
    ("Warning: something\n  WARNING: other\n" + PORTS_TABLE.replace("   BW Port1[Gb/sec]   MsgRate Port1[Mpps]", "").replace("  194.06  0.370140", ""),
     _empty(units="Gb/sec", bw_avg_gbps=388.12, rows=[ROW_388], warnings=["Warning: something", "WARNING: other"])),
])
def test_a_report_parses_to_exactly_this_result(text, expected):
    assert parse_bw(text) == expected


JSON_RESULTS = {"MsgSize": 65536, "n_iterations": 5000, "BW_peak": 390.76, "BW_average": 388.12, "MsgRate": 0.74028}


def _json(info=None, **results):
    return json.dumps({"test_info": dict({"test": "RDMA_Write_BW_Test", "Device": "mlx5_1", "Link_type": "IB", "Mtu": 4096}, **(info or {})),
                       "results": dict(JSON_RESULTS, **results)})


@pytest.mark.parametrize("text,units,expected", [
    (_json(), "Gb/sec", _empty(test="RDMA_Write BW Test", device="mlx5_1", link="IB", mtu=4096, units="Gb/sec", rows=[ROW_388], bw_avg_gbps=388.12)),
    (_json(BW_min=371.5, CPU_util=9), "MiB/sec",
     _empty(test="RDMA_Write BW Test", device="mlx5_1", link="IB", mtu=4096, units="MiB/sec", bw_avg_gbps=3.255787,
            rows=[dict(ROW_388, bw_min=371.5, cpu_util=9.0)])),
    (_json({"test": "Send_Bidirectional_Post_List_BW_Test", "Mtu": "4096", "Device": None, "Link_type": "Ethernet"}, MsgSize=8), "Gb/sec",
     _empty(test="Send Bidirectional Post List BW Test", link="Ethernet", units="Gb/sec", rows=[dict(ROW_388, bytes=8)], bw_avg_gbps=388.12)),
    (_json({"test": "RDMA_Read_Latency_Test"}), "Gb/sec",
     _empty(test="RDMA_Read Latency Test", device="mlx5_1", link="IB", mtu=4096, units="Gb/sec", rows=[ROW_388], bw_avg_gbps=388.12)),
    (_json({"test": ""}), "Gb/sec", _empty(device="mlx5_1", link="IB", mtu=4096, units="Gb/sec", rows=[ROW_388], bw_avg_gbps=388.12)),
])
def test_a_json_report_parses_to_exactly_this_result(text, units, expected):
    assert parse_bw(text, units=units) == expected


@pytest.mark.parametrize("text,units,message", [
    ("", None, "not a perftest result: no '#bytes #iterations BW peak[..] BW average[..] MsgRate[Mpps]' table and no perftest error message"),
    (TABLE_HEADER + " 65536      664644\n", None, "perftest result row has 2 fields, its header 5: '65536      664644'"),
    (TABLE_HEADER + " 65536      5000             390.76             abc   0.740280\n", None,
     "perftest result row has 'abc' where a number belongs: '65536      5000             390.76             abc   0.740280'"),
    (TABLE_HEADER + " 65536      50.5             390.76             388.12   0.740280\n", None,
     "perftest result row has '50.5' where a whole number belongs: '65536      50.5             390.76             388.12   0.740280'"),
    (TABLE_HEADER, None, "perftest result table without a result row and without an error message"),
    # the service level is a whole number as the byte and iteration counts are
    (TABLE_HEADER.replace("#bytes ", "#bytes #sl") + " 65536 3.0  5000  390.76  388.12  0.740280\n", None,
     "perftest result row has '3.0' where a whole number belongs: '65536 3.0  5000  390.76  388.12  0.740280'"),
    (TABLE_HEADER.replace("   MsgRate[Mpps]", ""), None,
     "perftest result header without BW average or MsgRate: '#bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]'"),
    ("387.412233\n", None,
     "perftest output is a bare number (387.412233, --output=bandwidth or message_rate): it carries no units and no message size"),
    ("{x", "Gb/sec", "perftest JSON report is not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"),
    ('{"test_info": {}}', "Gb/sec", "perftest JSON report needs the objects 'test_info' and 'results'"),
    ('{"test_info": [], "results": {}}', "Gb/sec", "perftest JSON report needs the objects 'test_info' and 'results'"),
    ('{"test_info": {}, "results": {}}', None,
     "perftest's JSON report does not say its units: pass units='Gb/sec' (--report_gbits) or 'MiB/sec'"),
    ('{"test_info": {}, "results": {}}', "GB/sec", "unknown perftest bandwidth unit 'GB/sec' (Gb/sec, MB/sec or MiB/sec)"),
    (_json(MsgRate=None), "Gb/sec", "perftest JSON report's results lack 'MsgRate'"),
    (_json(n_iterations="5"), "Gb/sec", "perftest JSON report's 'n_iterations' is not a number: '5'"),
    (_json(MsgSize=65536.0), "Gb/sec", "perftest JSON report's 'MsgSize' is not a number: 65536.0"),
    (_json(BW_average=True), "Gb/sec", "perftest JSON report's 'BW_average' is not a number: True"),
])
def test_each_refusal_reads_exactly(text, units, message):
    with pytest.raises(ValueError) as err:
        parse_bw(text, units=units)
    assert str(err.value) == message


def test_non_text_and_unknown_units_read_exactly():
    with pytest.raises(ValueError) as err:
        parse_bw(b" #bytes")
    assert str(err.value) == "perftest output must be text, not bytes"
    with pytest.raises(ValueError) as err:
        to_gbps(1.0, "GB/sec")
    assert str(err.value) == "unknown perftest bandwidth unit 'GB/sec' (Gb/sec, MB/sec or MiB/sec)"


@pytest.mark.parametrize("value,units,gbps", [(1.23456789, "Gb/sec", 1.234568), (1.0, "MB/sec", 0.008389), (3.0, "MiB/sec", 0.025166)])
def test_bandwidths_are_rounded_to_six_decimals(value, units, gbps):
    assert to_gbps(value, units) == gbps


# --- the stand-in on a simulated node ---------------------------------------------------------------------------------

class Node(object):
    """A simulated node (NVML simulator) in a temporary directory, and the stand-in run on it."""

    def __init__(self, tmp_path, monkeypatch, preset="h100-80gb-x8"):
        self.tmp = tmp_path
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "NVMLSIM_STATE": str(tmp_path / "state.json"),
                    "NVMLSIM_ROOT": str(tmp_path / "root"), "IB_WRITE_BW_STANDIN_FAIL_FILE": str(tmp_path / "no-FAIL")}
        monkeypatch.setenv("NVMLSIM_STATE", self.env["NVMLSIM_STATE"])
        monkeypatch.setenv("NVMLSIM_ROOT", self.env["NVMLSIM_ROOT"])
        self.sim("create", "--preset", preset, "--mig-minors", str(tmp_path / "mig-minors"))

    def sim(self, *argv):
        assert cli.main(list(argv)) == 0, argv

    def command(self, argv, program=STANDIN):
        return [sys.executable, program] + list(argv)

    def run(self, argv, program=STANDIN, **env):
        proc = subprocess.run(self.command(argv, program), env=dict(self.env, **env), cwd=str(self.tmp), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, timeout=60, check=False)
        return proc.returncode, proc.stdout, proc.stderr

    def pair(self, server_argv, client_argv, server_env=None, client_env=None, server_fails_first=False):
        """(server rc, stdout, stderr), (client rc, stdout, stderr) of a server and a client on loopback."""
        port = free_port()
        server = subprocess.Popen(self.command(server_argv + ["-p", str(port)]), env=dict(self.env, **(server_env or {})),
                                  cwd=str(self.tmp), stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        try:
            if server_fails_first:
                server.wait(timeout=30)
            client = (None, "", "")
            for _attempt in range(100):
                # perftest's client tries connect() once: a client started before the server listens is refused, so retry
                client = self.run(client_argv + ["-p", str(port), "localhost"], **(client_env or {}))
                if server_fails_first or "Couldn't connect to" not in client[2]:
                    break
                time.sleep(0.1)
            try:
                out, err = server.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                out, err = server.communicate()
        finally:
            if server.poll() is None:
                server.kill()
                server.communicate()
        return (server.returncode, out, err), client


def free_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


@pytest.fixture
def node(tmp_path, monkeypatch):
    return Node(tmp_path, monkeypatch)


def check_standin_notice(stderr):
    assert "ib_write_bw STAND-IN (not linux-rdma perftest's ib_write_bw; it moves no data)" in stderr


@pytest.mark.parametrize("argv,stdout,stderr", [
    (["-h"], "Usage:\n", ""),
    (["-V"], "Version: 6.22\n", ""),
    (["-s", "0"], "", " Message Size should be between 1 and 2147483647\n Parser function exited with Error\n"),
    (["-s", "3000M"], "", " Message Size should be between 1 and 2147483647\n"),
    (["-n", "3"], "", " Iteration num should be between 5 and 4294967296\n"),
    (["-t", "0"], "", " Tx depth should be between 1 and 15000\n"),
    (["-p", "x1"], "", " Port argument x1 should be int\n"),
    (["-i", "256"], "", "IB Port can't be less than 1\n"),
    (["-D", "0"], "", " Duration period must be positive\n"),
    (["-f", "-1"], "", " Margin must be non-negative int\n"),
    (["--report_gbits", "--report_gbits"], "", " Duplicated argument: report_gbits \n"),
    (["-p", "1", "--port", "2"], "", " Duplicated argument: -p \n"),
    (["--foo"], "Usage:", "ib_write_bw-standin: unrecognized option '--foo'\n Invalid Command or flag.\n"),
    (["-j"], "Usage:", "option requires an argument -- 'j'\n"),
    (["--report"], "Usage:", "option '--report' is ambiguous; possibilities:"),
    (["-e"], "", " Events feature not available on WRITE verb\n"),
    (["-c", "UD"], "", " UD connection only possible in SEND verb\n"),
    (["-c", "XYZ"], "", " Invalid Connection type. Please choose from {RC,UC,UD,XRC,DC,SRD}\n"),
    (["--use-srq"], " Using SRQ only avavilible in SEND tests.\n", ""),
    (["-T", "3"], " TOS only valid for rdma_cm based QP and RawEth QP \n", ""),
    (["-D", "2", "-f", "1"], " WARNING: BW peak won't be measured in this run.\n", "please check that DURATION > 2*MARGIN\n"),
    (["-a", "-D", "2"], "", "Duration mode currently doesn't support running on all sizes.\n"),
    (["--output=latency"], "", " Output verbosity level for BW can be: bandwidth, message_rate\n"),
    (["--use_rocm=0"], " Unsupported memory type\n", " Parser function exited with Error\n"),
    (["--use_cuda_dmabuf"], "", "CUDA DMA-BUF cannot be used without CUDA\n"),
    (["--rate_limit=123"], "The input value for hw rate limit is not supported", " Failed: Unknown rate limit value\n"),
    (["gpu-01", "gpu-02"], "", " Invalid Command line. Please check command rerun \n"),
    (["-c", "RawEth"], "", " you must enter source mac by this format -B XX:XX:XX:XX:XX:XX\n"),
    (["-c", "RawEth", "-B", "00:11:22:33:44:55"], "", " Raw Etherent test can only run on Ethernet link! exiting ...\n"),
])
def test_standin_refuses_arguments_with_wording_transcribed_from_perftest(node, argv, stdout, stderr):
    # the STAND-IN's wording, transcribed from perftest's source (not recorded from a real ib_write_bw)
    rc, out, err = node.run(argv)
    assert rc == 1
    assert stdout in out
    assert stderr in err
    check_standin_notice(err)


@pytest.mark.parametrize("argv", [["--reversed"], ["--run_infinitely"], ["-W", "counters/port_xmit_data"], ["--mmap=/tmp/x"]])
def test_what_is_not_emulated_says_so(node, argv):
    rc, out, err = node.run(argv)
    assert (rc, out) == (2, "")
    assert "ib_write_bw STAND-IN: " in err and " is not emulated" in err


@pytest.mark.parametrize("faults,argv,error,port", [
    ([], ["-d", "mlx5_9"], "IB device mlx5_9 not found\nUnable to find the Infiniband/RoCE device", None),
    ([("ib", "--hca", "mlx5_0", "--state", "down")], ["-d", "mlx5_0"],
     "Port number 1 state is Down\nCouldn't set the link layer\nCouldn't get context for the device", 1),
    ([("ib", "--hca", "mlx5_2", "--state", "init")], ["-d", "mlx5_2"], "Port number 1 state is Init", 1),
    ([("ib", "--hca", "mlx5_0", "--phys-state", "disabled")], [], "Port number 1 state is Down", 1),
    ([], ["-d", "mlx5_0", "-i", "2"], "Unable to query port 2 attributes\nCouldn't set the link layer", None),
    ([], ["-O"], "Unable to query port 2 attributes", None),
])
def test_device_and_port_faults_fail_before_connecting(node, faults, argv, error, port):
    for fault in faults:
        node.sim(*fault)
    rc, out, err = node.run(argv)
    assert rc == 1
    assert "Waiting for client" not in out
    result = parse_bw(out + err)
    assert result["error"].startswith(error)
    assert result["port"] == port


def test_a_node_without_hca_has_no_device(tmp_path, monkeypatch):
    rc, out, err = Node(tmp_path, monkeypatch, preset="l40s-x4").run(["-d", "mlx5_0"])
    assert (rc, out) == (1, "")
    assert parse_bw(err)["error"] == ("Did not detect devices\nIf device exists, check if driver is up\n"
                                      "Unable to find the Infiniband/RoCE device")


def test_the_sysfs_tree_can_be_named(node, tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(os.path.join(node.env["NVMLSIM_ROOT"], "var", "lib", "nvmlsim", "sys", "class", "infiniband", "mlx5_4"),
                    str(tree / "mlx5_4"))
    rc, out, err = node.run(["-d", "mlx5_0"], IB_WRITE_BW_STANDIN_SYSFS=str(tree))
    assert rc == 1 and "IB device mlx5_0 not found" in err and str(tree) in err


@pytest.mark.parametrize("server_argv,client_argv,faults,units,low,high,rows", [
    # the deep tier's single-node use: two HCAs of the node against each other, -D 2 (2 s sampled, margin 0)
    (["-d", "mlx5_0", "-F", "--report_gbits", "-D", "2"], ["-d", "mlx5_1", "-F", "--report_gbits", "-D", "2"], [],
     "Gb/sec", 0.96 * 400, 0.98 * 400, 1),
    # perftest's defaults: 5000 iterations of 64 KiB, MiB/sec
    (["-d", "mlx5_0"], ["-d", "mlx5_1"], [], "MiB/sec", 0.96 * 400, 0.98 * 400, 1),
    # a port at half width gives half, at either end
    (["-d", "mlx5_0", "--report_gbits"], ["-d", "mlx5_1", "--report_gbits"], [("ib", "--hca", "mlx5_1", "--rate", "200")],
     "Gb/sec", 0.96 * 200, 0.98 * 200, 1),
    (["-d", "mlx5_0", "--report_gbits"], ["-d", "mlx5_1", "--report_gbits"], [("ib", "--hca", "mlx5_0", "--width", "1X")],
     "Gb/sec", 0.96 * 100, 0.98 * 100, 1),
    (["-d", "mlx5_2", "--report_gbits", "-q", "4"], ["-d", "mlx5_3", "--report_gbits", "-q", "4"], [],
     "Gb/sec", 0.96 * 400, 0.98 * 400, 1),
    # the rate limiter caps it
    (["-d", "mlx5_0", "--report_gbits"], ["-d", "mlx5_1", "--report_gbits", "--rate_limit=100"], [],
     "Gb/sec", 0.96 * 100, 0.98 * 100, 1),
])
def test_a_server_and_a_client_meet_on_loopback(node, server_argv, client_argv, faults, units, low, high, rows):
    for fault in faults:
        node.sim(*fault)
    (src, sout, serr), (crc, cout, cerr) = node.pair(server_argv, client_argv)
    assert (src, crc) == (0, 0), serr + cerr
    check_standin_notice(serr)
    check_standin_notice(cerr)
    assert "* Waiting for client to connect... *" in sout and "Waiting" not in cout
    server, client = parse_bw(sout + serr), parse_bw(cout + cerr)
    assert (server["error"], client["error"]) == ("", "")
    assert (server["device"], client["device"]) == (server_argv[1], client_argv[1])
    assert (server["units"], client["units"]) == (units, units)
    assert (server["test"], server["link"], server["mtu"]) == ("RDMA_Write BW Test", "IB", 4096)
    assert server["rows"] == client["rows"]             # the server prints the client's report
    assert low <= client["bw_avg_gbps"] <= high
    row = client["rows"][-1]
    assert row["bw_avg"] * (1 if units == "Gb/sec" else MIB * 8 / 1e9) * 1e9 / 8 / row["bytes"] / 1e6 \
        == pytest.approx(row["msg_rate"], rel=1e-4)
    if "-D" in client_argv:
        assert row["bw_peak"] == 0.0
        assert client["warnings"] == ["WARNING: BW peak won't be measured in this run."]
        # what the link carries in the sampled 2 s
        assert row["iterations"] == pytest.approx(client["bw_avg_gbps"] * 1e9 / 8 / 65536 * 2, rel=1e-3)
    else:
        qps = int(client_argv[client_argv.index("-q") + 1]) if "-q" in client_argv else 1
        assert row["iterations"] == 5000 * qps
        assert row["bw_avg"] < row["bw_peak"] < row["bw_avg"] * 1.01
        assert cout.count(" local address: LID ") == qps
    assert " TX depth        : 128\n" in cout and "TX depth" not in sout


def test_all_sizes_print_every_size_on_the_client_and_the_last_on_the_server(node):
    (src, sout, serr), (crc, cout, cerr) = node.pair(["-d", "mlx5_0", "--report_gbits"], ["-d", "mlx5_1", "-a", "--report_gbits"])
    assert (src, crc) == (0, 0), serr + cerr
    client, server = parse_bw(cout), parse_bw(sout)
    assert [row["bytes"] for row in client["rows"]] == [2 ** i for i in range(1, 24)]
    assert server["rows"] == client["rows"][-1:]
    assert " CQ Moderation   : 100\n" in cout
    # small messages are message-rate bound, large ones link bound
    assert client["rows"][0]["msg_rate"] == pytest.approx(10.0)
    assert client["rows"][0]["bw_avg"] < 0.2 < 380 < client["bw_avg_gbps"]


def test_bidirectional_adds_both_directions(node):
    (src, sout, serr), (crc, cout, cerr) = node.pair(["-d", "mlx5_0", "-b", "--report_gbits"], ["-d", "mlx5_1", "-b", "--report_gbits"])
    assert (src, crc) == (0, 0), serr + cerr
    client, server = parse_bw(cout), parse_bw(sout)
    assert client["test"] == server["test"] == "RDMA_Write Bidirectional BW Test"
    assert 2 * 0.96 * 400 <= client["bw_avg_gbps"] <= 2 * 0.98 * 400
    assert server["bw_avg_gbps"] == pytest.approx(client["bw_avg_gbps"], abs=0.011)


def test_the_server_prints_the_clients_numbers_in_its_own_units(node):
    (src, sout, serr), (crc, cout, cerr) = node.pair(["-d", "mlx5_0"], ["-d", "mlx5_1", "--report_gbits"])
    assert (src, crc) == (0, 0)
    # as perftest: the client's Gb/s figures under the server's MiB/sec header
    assert parse_bw(sout)["units"] == "MiB/sec" and parse_bw(sout)["rows"] == parse_bw(cout)["rows"]


def test_output_bandwidth_prints_the_bare_number(node):
    (src, sout, serr), (crc, cout, cerr) = node.pair(["-d", "mlx5_0", "--report_gbits", "--output=bandwidth"],
                                                     ["-d", "mlx5_1", "--report_gbits", "--output=bandwidth"])
    assert (src, crc) == (0, 0)
    assert 0.96 * 400 <= float(cout) <= 0.98 * 400 and float(sout) == float(cout)
    with pytest.raises(ValueError, match="bare number"):
        parse_bw(cout)


def test_out_json_writes_perftests_json_report(node, tmp_path):
    report = str(tmp_path / "client.json")
    (src, sout, serr), (crc, cout, cerr) = node.pair(["-d", "mlx5_0", "--report_gbits"],
                                                     ["-d", "mlx5_1", "--report_gbits", "--out_json", "--out_json_file=" + report])
    assert (src, crc) == (0, 0)
    with open(report) as handle:
        text = handle.read()
    assert json.loads(text)["test_info"]["TX_depth"] == 128
    from_json, from_text = parse_bw(text, units="Gb/sec"), parse_bw(cout)
    assert from_json["bw_avg_gbps"] == from_text["bw_avg_gbps"]
    assert from_json["rows"][0]["iterations"] == from_text["rows"][0]["iterations"]


@pytest.mark.parametrize("where", ["server", "client"])
def test_the_link_limit_fails_the_client(node, where):
    argv = ["-d", "mlx5_0", "--report_gbits", "-w", "500"]
    (src, sout, serr), (crc, cout, cerr) = node.pair(argv if where == "server" else argv[:3],
                                                     ["-d", "mlx5_1", "--report_gbits"] + (["-w", "500"] if where == "client" else []))
    # perftest's server returns before it checks -w; the client fails its own limit
    assert (src, crc) == ((0, 0) if where == "server" else (0, 1))
    if where == "client":
        result = parse_bw(cout + cerr)
        assert result["error"] == "Error: BW result is below bw limit" and len(result["rows"]) == 1


def test_a_server_whose_port_is_down_leaves_the_client_unconnected(node):
    node.sim("ib", "--hca", "mlx5_0", "--state", "down")
    (src, sout, serr), (crc, cout, cerr) = node.pair(["-d", "mlx5_0"], ["-d", "mlx5_1"], server_fails_first=True)
    assert (src, crc) == (1, 1)
    assert parse_bw(sout + serr)["error"].startswith("Port number 1 state is Down")
    assert parse_bw(cout + cerr)["error"].startswith("Couldn't connect to localhost:")


def test_an_unknown_host_is_not_resolved(node):
    rc, out, err = node.run(["-d", "mlx5_1", "no-such-host.invalid"])
    assert rc == 1
    assert parse_bw(err)["error"].endswith("Problem in resolving basic address and port\n"
                                           "Unable to open file descriptor for socket connection\nUnable to init the socket connection")


@pytest.mark.parametrize("how", ["env", "file"])
def test_slow_divides_the_bandwidth_by_ten(node, tmp_path, how):
    program, env = STANDIN, {"IB_WRITE_BW_STANDIN_FAIL": "slow"}
    if how == "file":
        # installed as /opt/perftest-STANDIN/bin/ib_write_bw with /opt/perftest-STANDIN/FAIL next to bin/
        base = tmp_path / "opt" / "perftest-STANDIN"
        (base / "bin").mkdir(parents=True)
        program = str(base / "bin" / "ib_write_bw")
        shutil.copy(STANDIN, program)
        (base / "FAIL").write_text("slow\n")
        env = {"IB_WRITE_BW_STANDIN_FAIL_FILE": ""}
    node.env.update(env)
    node.command = lambda argv, _program=STANDIN: [sys.executable, program] + list(argv)
    (src, sout, serr), (crc, cout, cerr) = node.pair(["-d", "mlx5_0", "--report_gbits"], ["-d", "mlx5_1", "--report_gbits"])
    assert (src, crc) == (0, 0)
    assert 0.096 * 400 <= parse_bw(cout)["bw_avg_gbps"] <= 0.098 * 400


def test_abort_fails_the_first_completion(node):
    (src, sout, serr), (crc, cout, cerr) = node.pair(["-d", "mlx5_0"], ["-d", "mlx5_1"], client_env={"IB_WRITE_BW_STANDIN_FAIL": "abort"})
    assert (src, crc) == (1, 1)
    client, server = parse_bw(cout + cerr), parse_bw(sout + serr)
    assert client["rows"] == [] and client["error"].startswith("Completion with error at client\nFailed status 12: wr_id 0 syndrom 0x81")
    assert server["rows"] == [] and server["error"] == ("ethernet_read_keys: Couldn't read remote address\nUnable to read to "
                                                        "socket/rdma_cm\nFailed to exchange data between server and clients")


def test_an_unknown_failure_mode_is_refused(node):
    rc, out, err = node.run(["-d", "mlx5_0"], IB_WRITE_BW_STANDIN_FAIL="wrong")
    assert (rc, out) == (2, "")
    assert "failure mode 'wrong' is not one of slow, abort" in err


@pytest.mark.parametrize("faults,argv,low,high,error", [
    ([], ["--use_cuda=3"], 0.96 * 400, 0.98 * 400, ""),
    ([], ["--use_cuda_bus_id=0000:1b:00.0", "--use_cuda_dmabuf"], 0.96 * 400, 0.98 * 400, ""),
    # GPUDirect RDMA is capped by the GPU's PCIe link: Gen4 x8 is about 126 Gb/s
    ([("pcie", "--gpu", "0", "--gen", "4", "--width", "8")], ["--use_cuda=0"], 100, 120, ""),
    ([], ["--use_cuda=8"], None, None, "No such device ID (8) exists in system\nCouldn't init GPU context: 1\nFailed to init memory\n"
                                       "Couldn't create IB resources"),
    ([("module", "--unload", "nvidia_peermem")], ["--use_cuda=0"], None, None,
     "Couldn't allocate MR with error=14\nFailed to create MR\nCouldn't create IB resources"),
    ([("xid", "--gpu", "2", "--code", "79")], ["--use_cuda=2"], None, None, "cuCtxCreate() error=999\nCouldn't init GPU context: 1"),
    ([("driver", "--version", "550.90.07", "--kernel-module", "proprietary")], ["--use_cuda=0", "--use_cuda_dmabuf"], None, None,
     "DMA-BUF is not supported on this GPU\nFailed to init memory"),
])
def test_gpudirect_follows_the_simulated_gpu(node, faults, argv, low, high, error):
    for fault in faults:
        node.sim(*fault)
    (src, sout, serr), (crc, cout, cerr) = node.pair(["-d", "mlx5_0", "--report_gbits"], ["-d", "mlx5_1", "--report_gbits"] + argv)
    client = parse_bw(cout + cerr)
    assert "initializing CUDA\n" in cout
    if error:
        assert crc == 1 and client["error"].startswith(error), cout + cerr
        # the server has printed its header and then lost its peer
        assert src == 1 and parse_bw(sout + serr)["error"].startswith("ethernet_read_keys: Couldn't read remote address")
    else:
        assert (src, crc, client["error"]) == (0, 0, ""), cerr
        assert "device name = [NVIDIA H100 80GB HBM3]" in cout
        assert low <= client["bw_avg_gbps"] <= high
