// A real HDFS for the tests: Hadoop's own MiniDFSCluster (one NameNode, one DataNode, each the real
// server code, over real RPC on loopback ports) in this JVM. Run as a single source file, no build:
//
//   java -cp '.kafka-cache/hadoop-3.5.0/lib/*' services/cluster/MiniHdfs.java BASE_DIR
//
// It prints "ready hdfs://127.0.0.1:PORT" on one line once the DataNode has registered, then serves
// until its standard input closes: the Python side holds the pipe, so a test process that dies,
// however it dies, takes this JVM down with it (no orphaned NameNode on a shared machine).
import java.io.File;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;

public class MiniHdfs {
    public static void main(String[] args) throws Exception {
        File base = new File(args[0]).getAbsoluteFile();
        Configuration conf = new Configuration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, base.getPath());
        // loopback only, ports chosen by the kernel (tests share the machine)
        conf.set("dfs.namenode.rpc-address", "127.0.0.1:0");
        conf.set("dfs.namenode.http-address", "127.0.0.1:0");
        conf.set("dfs.datanode.address", "127.0.0.1:0");
        conf.set("dfs.datanode.http.address", "127.0.0.1:0");
        conf.set("dfs.datanode.ipc.address", "127.0.0.1:0");
        conf.setBoolean("dfs.permissions.enabled", false);
        conf.setInt("dfs.replication", 1);
        MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf, base)
                .numDataNodes(1).nameNodePort(0).format(true).build();
        Runtime.getRuntime().addShutdownHook(new Thread(cluster::shutdown));
        cluster.waitActive();
        System.out.println("ready " + cluster.getURI());
        System.out.flush();
        // serve until the parent closes our stdin (or dies)
        while (System.in.read() != -1) { }
        cluster.shutdown();
        System.exit(0);
    }
}
