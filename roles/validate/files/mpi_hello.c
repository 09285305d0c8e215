/* gpucluster.bringup validate: the smallest MPI program that proves the ranks form one world.
 * Every rank prints "mpi_hello rank R of N on HOST"; the validate role checks that ranks 0..N-1 all
 * report in one world of the expected size (N separate "rank 0 of 1" lines mean no PMI wiring).
 * A barrier and an allreduce make the ranks talk to each other. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank = 0, size = 0, len = 0, one = 1, sum = 0;
    char host[MPI_MAX_PROCESSOR_NAME];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (sum != size) {
        fprintf(stderr, "mpi_hello: allreduce gave %d, expected %d\n", sum, size);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    printf("mpi_hello rank %d of %d on %s\n", rank, size, host);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
