// A real HDFS for the tests: Hadoop's own MiniDFSCluster (one NameNode, one DataNode, each the real
// server code, over real RPC on loopback ports) in this JVM. Run as a single source file, no build:
//
//   java -cp '.kafka-cache/hadoop-3.5.0/lib/*' devtools/cluster/MiniHdfs.java BASE_DIR
//
// It prints "ready hdfs://localhost:PORT" on one line once the DataNode has registered, then serves
// until its standard input closes: the Python side holds the pipe, so a test process that dies,
// however it dies, takes this JVM down with it (no orphaned NameNode on a shared machine).
// Meanwhile it takes one command a line on standard input, and answers "ok" or "error MESSAGE" on one
// line (a JVM per `hdfs dfs` command would cost seconds each):
//   put LOCAL PATH     copy a local file or directory to PATH (replacing what is there: a new file)
//   rm PATH            delete a file or a directory
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
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
        FileSystem fs = cluster.getFileSystem();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {  // null: the parent closed our stdin, or died
            String[] words = line.trim().split(" ");
            try {
                if (words[0].equals("put") && words.length == 3) {
                    fs.copyFromLocalFile(false, true, new Path(words[1]), new Path(words[2]));
                } else if (words[0].equals("rm") && words.length == 2) {
                    if (!fs.delete(new Path(words[1]), true)) throw new IllegalArgumentException("no such path");
                } else {
                    throw new IllegalArgumentException("unknown command: " + line);
                }
                System.out.println("ok");
            } catch (Exception e) {
                System.out.println("error " + String.valueOf(e).replace('\n', ' '));
            }
            System.out.flush();
        }
        cluster.shutdown();
        System.exit(0);
    }
}
